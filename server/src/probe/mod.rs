//! `culint probe`: what the GPU a job will run on really has. Free memory and who holds the rest,
//! the largest allocation that succeeds, cuBLAS and cuBLASLt health, the driver against the CUDA
//! version PyTorch was built for, and the CUDA environment variables in effect.
//!
//! The driver and the libraries are loaded at run time (cudarc with dynamic loading), so culint
//! builds and runs on machines without CUDA. The probe never panics: each library is checked
//! before use, every call is guarded, and every failure becomes a check result.

mod compatibility;
mod cublas;
mod device;
mod driver;
mod environment;
pub mod format;
mod guard;
mod libraries;
mod nvml;
mod python;
mod render;
mod report;

use std::path::PathBuf;
use std::time::Instant;

pub use report::{
    Check, DeviceReport, DriverInfo, EXIT_ALL_PASS, EXIT_FINDINGS, EXIT_NO_GPU, GpuProcess, ProbeReport,
    SCHEMA_VERSION, TorchInfo, Unavailable, Verdict,
};

use crate::cuda_env::env_vars;
use crate::hardware::HardwareFacts;
use compatibility::torch_check;
use device::{Libraries, probe_device};
use nvml::NvmlSession;

/// What to probe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    /// Probe only this device (numbered as the process sees it); all devices when `None`.
    pub device: Option<usize>,
    /// Skip the largest-allocation search.
    pub quick: bool,
    /// The Python whose PyTorch to compare with the driver; `python3` on PATH when `None`.
    pub python: Option<PathBuf>,
}

/// Probe the driver, the devices, cuBLAS, PyTorch and the environment. Never panics: every
/// failure is a check in the report.
pub fn run(options: &ProbeOptions) -> ProbeReport {
    let started = Instant::now();
    let mut report = ProbeReport::new(options.quick);
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    // The interpreter's answer and loading cuBLAS (hundreds of MB) overlap with the driver's
    // start-up, which is most of a quick probe's time.
    std::thread::scope(|scope| {
        let background = scope.spawn(|| {
            let python = python::environment(options.python.as_deref());
            let torch = python.as_ref().ok().and_then(python::torch);
            let python_dirs = python.as_ref().map(|env| env.search_path.clone()).unwrap_or_default();
            (python, torch, Libraries::load(&python_dirs))
        });
        let driver = open_driver(&vars);
        let (python, torch, libraries) = background
            .join()
            .unwrap_or_else(|_| (Err("reading the Python environment failed".to_owned()), None, Libraries::missing()));
        report.torch = torch;
        probe_machine(&mut report, options, driver, &libraries, &vars);
        report.checks.push(torch_check(&python, report.torch.as_ref(), report.driver.cuda_version.as_deref()));
    });
    report.checks.extend(environment::checks(&vars));
    report.checks.extend(environment::shadowed_alloc_conf(&vars));
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report
}

fn probe_machine(
    report: &mut ProbeReport,
    options: &ProbeOptions,
    driver: Result<OpenedDriver, (Unavailable, String)>,
    libraries: &Libraries,
    vars: &[(String, String)],
) {
    match driver {
        Err((unavailable, reason)) => {
            report.checks.push(Check::fail("driver", reason.clone()).knowledge("cuda/not-available").action(
                "Run on a machine with an NVIDIA GPU and driver; in a container, start it with GPU access (docker run --gpus all).",
            ));
            report.unavailable = Some(unavailable);
            report.reason = Some(reason);
        }
        Ok(opened) => {
            report.driver = opened.info.clone();
            report.device_count = opened.device_count;
            report.checks.push(Check::ok(
                "driver",
                format!(
                    "NVIDIA driver {} supports CUDA {}.{} ({})",
                    opened.info.driver_version.as_deref().unwrap_or("(version unknown)"),
                    opened.cuda_version.0,
                    opened.cuda_version.1,
                    opened.info.library.as_deref().unwrap_or("libcuda")
                ),
            ));
            let selected = select_devices(report, options.device, vars);
            for index in selected {
                let device = probe_device(index, options, &opened, libraries, &report.torch, vars);
                report.devices.push(device);
            }
        }
    }
}

/// Facts for `culint check --probe` and the language server, without creating a CUDA context:
/// the visible device count, and the memory and compute capability of `device` (default 0).
pub fn hardware_facts(device: Option<usize>) -> Result<HardwareFacts, String> {
    let vars: Vec<(String, String)> = std::env::vars().collect();
    let opened = open_driver(&vars).map_err(|(_, reason)| reason)?;
    let index = device.unwrap_or(0);
    if index >= opened.device_count {
        return Err(missing_device_message(index, opened.device_count, &vars));
    }
    let properties = driver::device_properties(index).map_err(|failure| failure.message)?;
    Ok(HardwareFacts {
        gpus: Some(opened.device_count),
        memory_bytes: Some(properties.total_bytes),
        compute_capability: Some(properties.compute_capability),
    })
}

/// A working driver with at least one device.
struct OpenedDriver {
    info: DriverInfo,
    cuda_version: (u32, u32),
    device_count: usize,
    nvml: Result<NvmlSession, String>,
}

fn open_driver(vars: &[(String, String)]) -> Result<OpenedDriver, (Unavailable, String)> {
    if !driver::library_present() {
        return Err((
            Unavailable::NoDriver,
            "no NVIDIA driver: libcuda.so.1 could not be loaded (not installed, or not on the library path)".to_owned(),
        ));
    }
    let visible = vars.iter().find(|(name, _)| name == "CUDA_VISIBLE_DEVICES").map(|(_, value)| value.as_str());
    let hidden_note = match visible {
        Some(value) if env_vars::hides_every_gpu(value) => {
            format!(" (CUDA_VISIBLE_DEVICES=\"{value}\" hides every GPU)")
        }
        _ => String::new(),
    };
    if let Err(failure) = driver::init() {
        return Err(if failure.is("CUDA_ERROR_NO_DEVICE") {
            (Unavailable::NoGpu, format!("no GPU: the NVIDIA driver is loaded but sees no device{hidden_note}"))
        } else {
            (Unavailable::NoDriver, format!("no usable NVIDIA driver: {failure}"))
        });
    }
    let cuda_version = driver::cuda_version().map_err(|failure| (Unavailable::NoDriver, failure.message))?;
    let device_count = driver::device_count().map_err(|failure| (Unavailable::NoDriver, failure.message))?;
    if device_count == 0 {
        return Err((
            Unavailable::NoGpu,
            format!("no GPU: the NVIDIA driver is loaded but sees no device{hidden_note}"),
        ));
    }
    let nvml = NvmlSession::open();
    let info = DriverInfo {
        library: libraries::mapped_path("libcuda"),
        cuda_version: Some(format!("{}.{}", cuda_version.0, cuda_version.1)),
        driver_version: nvml.as_ref().ok().and_then(NvmlSession::driver_version),
    };
    Ok(OpenedDriver { info, cuda_version, device_count, nvml })
}

fn missing_device_message(index: usize, count: usize, vars: &[(String, String)]) -> String {
    let visible = vars
        .iter()
        .find(|(name, _)| name == "CUDA_VISIBLE_DEVICES")
        .map(|(_, value)| format!(" with CUDA_VISIBLE_DEVICES={value}"))
        .unwrap_or_default();
    let plural = if count == 1 { "device is" } else { "devices are" };
    format!("device {index} does not exist: {count} {plural} visible{visible}, numbered 0 to {}", count - 1)
}

/// The devices to examine, with a check saying which.
fn select_devices(report: &mut ProbeReport, requested: Option<usize>, vars: &[(String, String)]) -> Vec<usize> {
    let count = report.device_count;
    match requested {
        Some(index) if index >= count => {
            report.checks.push(
                Check::fail("devices", missing_device_message(index, count, vars))
                    .knowledge("cuda/invalid-device-ordinal")
                    .action(format!("Pick a device from 0 to {}; CUDA numbers only the visible devices.", count - 1)),
            );
            Vec::new()
        }
        Some(index) => {
            report.checks.push(Check::ok("devices", format!("{count} visible, probing device {index}")));
            vec![index]
        }
        None => {
            report.checks.push(Check::ok("devices", format!("{count} visible")));
            (0..count).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_device_names_the_visible_range() {
        let vars = vec![("CUDA_VISIBLE_DEVICES".to_owned(), "2,3".to_owned())];
        assert_eq!(
            missing_device_message(3, 2, &vars),
            "device 3 does not exist: 2 devices are visible with CUDA_VISIBLE_DEVICES=2,3, numbered 0 to 1"
        );
    }
}
