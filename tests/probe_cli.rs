//! `culint probe` through the built binary, on any machine. On a machine without the NVIDIA
//! driver (CI) the no-driver path is checked for real: one clear line, exit code 3, no panic.

use std::path::Path;
use std::process::{Command, Output};

use culint::probe::{Check, DeviceReport, GpuProcess, ProbeReport, TorchInfo};
use serde_json::Value;

fn culint() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_culint"));
    // The probe reports these variables, so the tests start from none of them.
    for (name, _) in std::env::vars() {
        if culint::cuda_env::env_vars::in_scope(&name) && name != "CUDA_VISIBLE_DEVICES" {
            command.env_remove(name);
        }
    }
    command
}

/// Whether this machine has the NVIDIA driver's device nodes; the no-driver assertions apply
/// only where it does not.
fn has_nvidia_driver() -> bool {
    Path::new("/dev/nvidiactl").exists()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
    })
}

fn schema_errors(instance: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(include_str!("../docs/probe-schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("the schema is valid draft 2020-12");
    validator.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

#[test]
fn without_a_driver_the_probe_says_so_in_one_line_and_exits_3() {
    if has_nvidia_driver() {
        return;
    }
    let output = culint().arg("probe").output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        "culint probe: no NVIDIA driver: libcuda.so.1 could not be loaded (not installed, or not on the library path)\n"
    );
}

#[test]
fn without_a_driver_json_and_markdown_still_report_and_exit_3() {
    if has_nvidia_driver() {
        return;
    }
    let output = culint().args(["probe", "--json", "--quick"]).output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let report = json(&output);
    assert_eq!(report["unavailable"], "no-driver");
    assert_eq!(report["checks"][0]["id"], "driver");
    assert_eq!(report["checks"][0]["knowledge"], "cuda/not-available");
    assert_eq!(report["quick"], true);
    let markdown = culint().args(["probe", "--markdown"]).output().unwrap();
    assert_eq!(markdown.status.code(), Some(3));
    let text = String::from_utf8(markdown.stdout).unwrap();
    assert!(text.contains("| fail | `driver` | no NVIDIA driver"), "{text}");
}

#[test]
fn json_output_matches_the_documented_schema() {
    let output = culint().args(["probe", "--json"]).output().unwrap();
    let report = json(&output);
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    assert!(matches!(output.status.code(), Some(0 | 1 | 3)));
}

#[test]
fn a_full_report_matches_the_schema_and_the_schema_rejects_drift() {
    let mut report = ProbeReport::new(false);
    report.device_count = 1;
    report.driver.cuda_version = Some("13.0".into());
    report.torch = Some(TorchInfo {
        python: "/usr/bin/python3".into(),
        version_file: Some("/site/torch/version.py".into()),
        version: Some("2.11.0+cu130".into()),
        cuda: Some("13.0".into()),
    });
    let mut device = DeviceReport::new(0);
    device.name = Some("NVIDIA H100 80GB HBM3".into());
    device.uuid = Some("GPU-00010203-0405-0607-0809-0a0b0c0d0e0f".into());
    device.compute_capability = Some((9, 0));
    device.bf16 = Some(true);
    device.total_bytes = Some(85_031_714_816);
    device.free_bytes = Some(84_500_000_000);
    device.other_processes = vec![GpuProcess { pid: 42, name: Some("python".into()), used_bytes: None }];
    device.other_processes_bytes = Some(0);
    device.largest_allocation_bytes = Some(84_400_000_000);
    device.checks.push(Check::warning("cublas.handle", "x").knowledge("cublas/alloc-failed").action("y"));
    report.devices.push(device);
    let value: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(schema_errors(&value), Vec::<String>::new());

    let mut drifted = value.clone();
    drifted["devices"][0]["checks"][0]["verdict"] = "maybe".into();
    drifted["devices"][0]["extra"] = 1.into();
    assert_eq!(schema_errors(&drifted).len(), 2);
}

#[test]
fn torch_is_read_from_the_python_environment_without_importing_it() {
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(site.path().join("torch")).unwrap();
    // Importing this would fail loudly: the probe must only read version.py.
    std::fs::write(site.path().join("torch/__init__.py"), "raise SystemExit('imported')\n").unwrap();
    std::fs::write(site.path().join("torch/version.py"), "__version__ = '2.5.1+cu124'\ncuda: Optional[str] = '12.4'\n")
        .unwrap();
    let output = culint().args(["probe", "--json", "--quick"]).env("PYTHONPATH", site.path()).output().unwrap();
    let report = json(&output);
    assert_eq!(report["torch"]["version"], "2.5.1+cu124");
    assert_eq!(report["torch"]["cuda"], "12.4");
    let torch_check = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "torch.cuda").unwrap();
    if !has_nvidia_driver() {
        assert_eq!(torch_check["verdict"], "skipped");
        assert_eq!(torch_check["summary"], "PyTorch 2.5.1+cu124 is built for CUDA 12.4; no driver to compare it with");
    }
}

#[test]
fn a_missing_python_is_a_skipped_check_not_an_error() {
    let output = culint().args(["probe", "--json", "--python", "/nonexistent/python3"]).output().unwrap();
    let report = json(&output);
    let torch_check = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "torch.cuda").unwrap();
    assert_eq!(torch_check["verdict"], "skipped");
    assert!(torch_check["summary"].as_str().unwrap().contains("could not run `/nonexistent/python3`"));
}

#[test]
fn environment_variables_in_effect_are_validated() {
    let output = culint()
        .args(["probe", "--json", "--quick"])
        .env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:true")
        .env("CUBLASLT_HEURISTIC_MODE", "1")
        .env("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        .output()
        .unwrap();
    let report = json(&output);
    let verdict = |id: &str| {
        let check = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == id);
        check.unwrap_or_else(|| panic!("no check {id}: {report}"))["verdict"].as_str().unwrap().to_owned()
    };
    assert_eq!(verdict("env.PYTORCH_CUDA_ALLOC_CONF"), "warning");
    assert_eq!(verdict("env.CUBLASLT_HEURISTIC_MODE"), "warning");
    assert_eq!(verdict("env.CUBLAS_WORKSPACE_CONFIG"), "ok");
}

#[test]
fn usage_errors_exit_2() {
    for args in [&["probe", "--device", "abc"][..], &["probe", "--json", "--markdown"], &["probe", "--bogus"]] {
        let output = culint().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(!output.stderr.is_empty());
    }
}
