//! The driver against the CUDA version the local PyTorch was built for.

use super::python::{self, PythonEnvironment};
use super::report::{Check, TorchInfo};

/// The minimum Linux driver release for each CUDA major version (CUDA toolkit release notes,
/// "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility").
fn minimum_driver(cuda_major: u32) -> Option<&'static str> {
    match cuda_major {
        11 => Some("450.80.02"),
        12 => Some("525.60.13"),
        13 => Some("580.65.06"),
        _ => None,
    }
}

pub(super) fn torch_check(
    python: &Result<PythonEnvironment, String>,
    torch: Option<&TorchInfo>,
    driver_cuda: Option<&str>,
) -> Check {
    const ID: &str = "torch.cuda";
    let environment = match python {
        Ok(environment) => environment,
        Err(reason) => return Check::skipped(ID, format!("no Python to read PyTorch from: {reason}")),
    };
    let Some(torch) = torch else {
        return Check::skipped(
            ID,
            format!(
                "PyTorch is not installed for {} (no torch/version.py in its {} package folders)",
                environment.executable,
                environment.search_path.len()
            ),
        );
    };
    let version = torch.version.as_deref().unwrap_or("(unknown version)");
    let Some(torch_cuda) = torch.cuda.as_deref() else {
        return Check::warning(ID, format!("PyTorch {version} ({}) is a build without CUDA: it cannot use the GPU", environment.executable))
            .knowledge("cuda/not-available")
            .action("Install a CUDA build of PyTorch (https://pytorch.org/get-started/locally/) for a CUDA version the driver supports.");
    };
    let built_for = format!("PyTorch {version} is built for CUDA {torch_cuda}");
    let (Some(wanted), Some(available)) =
        (python::parse_cuda_version(torch_cuda), driver_cuda.and_then(python::parse_cuda_version))
    else {
        return Check::skipped(ID, format!("{built_for}; no driver to compare it with"));
    };
    let driver_text = driver_cuda.unwrap_or_default();
    let update = |major: u32| match minimum_driver(major) {
        Some(release) => format!(
            "Update the NVIDIA driver to release {release} or later, or install a PyTorch built for CUDA {driver_text} or older."
        ),
        None => format!("Update the NVIDIA driver, or install a PyTorch built for CUDA {driver_text} or older."),
    };
    if wanted.0 > available.0 {
        Check::fail(
            ID,
            format!("{built_for}, but the driver supports only CUDA {driver_text}: CUDA calls fail at start-up"),
        )
        .knowledge("cuda/driver-too-old")
        .action(update(wanted.0))
    } else if wanted > available {
        Check::warning(
            ID,
            format!("{built_for} and the driver supports CUDA {driver_text}: it runs through minor version compatibility, but kernels that need JIT compilation (PTX) fail"),
        )
        .knowledge("cuda/driver-too-old")
        .action(update(wanted.0))
    } else {
        Check::ok(ID, format!("{built_for}; the driver supports CUDA {driver_text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::report::Verdict;

    #[test]
    fn torch_against_driver() {
        let env = Ok(PythonEnvironment { executable: "/usr/bin/python3".into(), search_path: Vec::new() });
        let torch = |cuda: Option<&str>| TorchInfo {
            python: "/usr/bin/python3".into(),
            version_file: None,
            version: Some("2.11.0".into()),
            cuda: cuda.map(str::to_owned),
        };
        let check = torch_check(&env, Some(&torch(Some("13.0"))), Some("12.8"));
        assert_eq!((check.verdict, check.knowledge.as_deref()), (Verdict::Fail, Some("cuda/driver-too-old")));
        assert!(check.action.unwrap().contains("580.65.06"));
        assert_eq!(torch_check(&env, Some(&torch(Some("12.8"))), Some("12.4")).verdict, Verdict::Warning);
        assert_eq!(torch_check(&env, Some(&torch(Some("12.4"))), Some("13.0")).verdict, Verdict::Ok);
        assert_eq!(torch_check(&env, Some(&torch(None)), Some("13.0")).verdict, Verdict::Warning);
        assert_eq!(torch_check(&env, Some(&torch(Some("12.4"))), None).verdict, Verdict::Skipped);
        assert_eq!(torch_check(&env, None, Some("13.0")).verdict, Verdict::Skipped);
    }
}
