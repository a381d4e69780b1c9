//! `culint probe`: what the GPU a job will run on really has. Free memory and who holds the rest,
//! the largest allocation that succeeds, cuBLAS and cuBLASLt health, the driver against the CUDA
//! version PyTorch was built for, and the CUDA environment variables in effect.
//!
//! The driver and the libraries are loaded at run time (cudarc with dynamic loading), so culint
//! builds and runs on machines without CUDA. The probe never panics: each library is checked
//! before use, every call is guarded, and every failure becomes a check result.

mod cublas;
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

use crate::cuda_env::{cublas_workspace, env_vars};
use crate::hardware::HardwareFacts;
use driver::{Context, DeviceProperties};
use format::bytes;
use libraries::{CudaLibrary, LibraryStatus};
use nvml::NvmlSession;
use python::PythonEnvironment;

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

/// Other processes holding at least this much, or this share of the device, make a warning.
const OTHER_PROCESSES_WARN_BYTES: u64 = 1 << 30;
const OTHER_PROCESSES_WARN_SHARE: f64 = 0.05;
/// Free memory below this share of the total makes a warning.
const LOW_FREE_SHARE: f64 = 0.8;
/// The largest-allocation search stops when its bracket is this narrow.
const ALLOCATION_SEARCH_PRECISION: u64 = 64 << 20;
/// ... or after this many allocations, whichever comes first.
const ALLOCATION_SEARCH_STEPS: usize = 16;

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

/// cuBLAS and cuBLASLt, loaded once for all devices.
struct Libraries {
    cublas: LibraryStatus,
    cublas_lt: LibraryStatus,
}

impl Libraries {
    fn load(python_dirs: &[PathBuf]) -> Self {
        // cuBLAS needs cuBLASLt, so the copy beside it goes first.
        let cublas_lt = libraries::load(CudaLibrary::CublasLt, python_dirs);
        let cublas = libraries::load(CudaLibrary::Cublas, python_dirs);
        Self { cublas, cublas_lt }
    }

    fn missing() -> Self {
        let reason = || LibraryStatus::Missing { reason: "the library search did not finish".to_owned() };
        Self { cublas: reason(), cublas_lt: reason() }
    }
}

fn library_label(status: &LibraryStatus, stem: &str) -> String {
    match status {
        LibraryStatus::Loaded { path, torch_copy } => {
            let path = path.as_deref().unwrap_or(stem);
            match torch_copy {
                Some(copy) => format!("{path}; PyTorch loads its own copy, {copy}"),
                None => path.to_owned(),
            }
        }
        LibraryStatus::Missing { .. } => stem.to_owned(),
    }
}

fn probe_device(
    index: usize,
    options: &ProbeOptions,
    opened: &OpenedDriver,
    libraries: &Libraries,
    torch: &Option<TorchInfo>,
    vars: &[(String, String)],
) -> DeviceReport {
    let mut device = DeviceReport::new(index);
    let properties = match driver::device_properties(index) {
        Ok(properties) => properties,
        Err(failure) => {
            device.checks.push(Check::fail("device", failure.message).action(
                "Check `nvidia-smi`; the device may have fallen off the bus or need a reset by an administrator.",
            ));
            return device;
        }
    };
    device.name = Some(properties.name.clone());
    device.uuid = Some(properties.uuid.clone());
    device.compute_capability = Some(properties.compute_capability);
    device.bf16 = Some(properties.compute_capability.0 >= 8);
    device.total_bytes = Some(properties.total_bytes);
    device.checks.push(device_check(&properties, torch.as_ref()));

    match &opened.nvml {
        Ok(nvml) => {
            let check = other_processes_check(&mut device, nvml, &properties);
            device.checks.push(check);
        }
        Err(reason) => device.checks.push(Check::skipped("memory.other-processes", reason.clone())),
    }

    let context = match Context::open(properties.device) {
        Ok(context) => context,
        Err(failure) => {
            let mut check = Check::fail("context", format!("creating a CUDA context failed: {failure}"));
            if failure.is("CUDA_ERROR_OUT_OF_MEMORY") {
                check = check.knowledge("cuda/oom-other-processes").action(
                    "The device is full before your job starts: stop the processes holding it, or pick another GPU.",
                );
            }
            device.checks.push(check);
            return device;
        }
    };
    match context.memory_info() {
        Ok((free, _)) => {
            device.free_bytes = Some(free);
            device.checks.push(free_memory_check(free, properties.total_bytes));
        }
        Err(failure) => device.checks.push(Check::fail("memory.free", failure.message)),
    }
    let largest = if options.quick {
        Check::skipped("memory.largest-allocation", "skipped with --quick")
    } else {
        largest_allocation_check(&mut device, &context)
    };
    device.checks.push(largest);

    let cublas_label = library_label(&libraries.cublas, "libcublas");
    device.checks.push(match &libraries.cublas {
        LibraryStatus::Loaded { .. } => cublas::handle_check(&context, &cublas_label),
        LibraryStatus::Missing { reason } => Check::skipped("cublas.handle", reason.clone()),
    });
    let (workspace, origin) = cublas_workspace_size(properties.compute_capability, vars);
    let lt_label = library_label(&libraries.cublas_lt, "libcublasLt");
    device.checks.push(match &libraries.cublas_lt {
        LibraryStatus::Loaded { .. } => cublas::heuristic_check(&context, &lt_label, workspace, &origin),
        LibraryStatus::Missing { reason } => Check::skipped("cublaslt.heuristic", reason.clone()),
    });
    drop(context);
    device
}

/// The lowest compute capability each CUDA major version still compiles for (CUDA release notes:
/// 12.0 dropped Kepler, 13.0 dropped Maxwell, Pascal and Volta).
fn minimum_compute_capability(cuda_major: u32) -> Option<(u32, u32)> {
    match cuda_major {
        11 => Some((3, 5)),
        12 => Some((5, 0)),
        13.. => Some((7, 5)),
        _ => None,
    }
}

fn device_check(properties: &DeviceProperties, torch: Option<&TorchInfo>) -> Check {
    let (major, minor) = properties.compute_capability;
    let bf16 = if major >= 8 { "bf16 native" } else { "no native bf16 (use fp16 with a GradScaler)" };
    let summary =
        format!("{}, compute capability {major}.{minor}, {bf16}, {}", properties.name, bytes(properties.total_bytes));
    let torch_cuda = torch.and_then(|t| t.cuda.as_deref()).and_then(python::parse_cuda_version);
    if let Some((cuda_major, cuda_minor)) = torch_cuda
        && let Some(minimum) = minimum_compute_capability(cuda_major)
        && (major, minor) < minimum
    {
        return Check::fail(
            "device",
            format!(
                "{summary}: PyTorch is built for CUDA {cuda_major}.{cuda_minor}, which has no kernels below compute capability {}.{}",
                minimum.0, minimum.1
            ),
        )
        .knowledge("cuda/no-kernel-image")
        .action("Install a PyTorch built for an older CUDA that still supports this GPU, or use a newer GPU.");
    }
    Check::ok("device", summary)
}

fn other_processes_check(device: &mut DeviceReport, nvml: &NvmlSession, properties: &DeviceProperties) -> Check {
    const ID: &str = "memory.other-processes";
    let processes = match nvml.other_processes(&properties.uuid) {
        Ok(processes) => processes,
        Err(reason) => return Check::skipped(ID, reason),
    };
    let held: u64 = processes.iter().filter_map(|p| p.used_bytes).sum();
    device.other_processes_bytes = Some(held);
    device.other_processes = processes.clone();
    if processes.is_empty() {
        return Check::ok(ID, "no other process holds memory on this device");
    }
    let listed: Vec<String> = processes
        .iter()
        .take(5)
        .map(|p| {
            let name = p.name.as_deref().unwrap_or("?");
            let used = p.used_bytes.map_or_else(|| "unknown amount".to_owned(), bytes);
            format!("{name} (pid {}) {used}", p.pid)
        })
        .collect();
    let count = processes.len();
    let summary = format!(
        "{count} other process{} hold{} {}: {}{}",
        if count == 1 { "" } else { "es" },
        if count == 1 { "s" } else { "" },
        bytes(held),
        listed.join(", "),
        if count > 5 { ", ..." } else { "" }
    );
    let heavy = held >= OTHER_PROCESSES_WARN_BYTES
        || (held as f64) >= OTHER_PROCESSES_WARN_SHARE * properties.total_bytes as f64;
    if heavy {
        Check::warning(ID, summary)
            .knowledge("cuda/oom-other-processes")
            .action("Stop those processes, or pick a free GPU with CUDA_VISIBLE_DEVICES; their memory is not available to your job.")
    } else {
        Check::ok(ID, summary)
    }
}

fn free_memory_check(free: u64, total: u64) -> Check {
    let summary = format!("{} of {} free", bytes(free), bytes(total));
    if (free as f64) < LOW_FREE_SHARE * total as f64 {
        Check::warning("memory.free", summary)
            .knowledge("cuda/oom-other-processes")
            .action("Less memory is free than the device has: find what holds it with `nvidia-smi` and free it before launching.")
    } else {
        Check::ok("memory.free", summary)
    }
}

/// Binary search for the largest single allocation, freeing every allocation at once.
fn largest_allocation_check(device: &mut DeviceReport, context: &Context) -> Check {
    const ID: &str = "memory.largest-allocation";
    let Some(free) = device.free_bytes else {
        return Check::skipped(ID, "free memory unknown");
    };
    match largest_allocation(free, |size| context.try_allocation(size).map_err(|failure| failure.message)) {
        Ok(largest) => {
            device.largest_allocation_bytes = Some(largest);
            let after = context.memory_info().map(|(free_after, _)| free_after).unwrap_or(free);
            let summary = format!("largest single allocation {} of {} free", bytes(largest), bytes(free));
            if after + ALLOCATION_SEARCH_PRECISION < free {
                Check::warning(
                    ID,
                    format!("{summary}; free memory did not come back ({} after the search)", bytes(after)),
                )
            } else if (largest as f64) < 0.9 * free as f64 {
                Check::warning(ID, format!("{summary}: free memory is split into smaller pieces"))
                    .knowledge("cuda/oom-other-processes")
                    .action("A single tensor larger than the largest piece fails even though enough memory is free in total.")
            } else {
                Check::ok(ID, summary)
            }
        }
        Err(message) => Check::fail(ID, message),
    }
}

/// The largest size for which `try_allocate` succeeds, to within [`ALLOCATION_SEARCH_PRECISION`],
/// trying `free` first (usually it succeeds, or nearly).
fn largest_allocation(free: u64, mut try_allocate: impl FnMut(u64) -> Result<bool, String>) -> Result<u64, String> {
    let mut succeeded = 0u64;
    let mut failed = free.saturating_add(1);
    let mut candidate = free;
    for _ in 0..ALLOCATION_SEARCH_STEPS {
        if candidate == 0 || failed - succeeded <= ALLOCATION_SEARCH_PRECISION {
            break;
        }
        if try_allocate(candidate)? {
            succeeded = candidate;
        } else {
            failed = candidate;
        }
        // Step down from the top first: the answer is usually a little below `free`.
        let gap = failed - succeeded;
        candidate = if succeeded == 0 && gap > 4 * ALLOCATION_SEARCH_PRECISION && failed == free {
            free - ALLOCATION_SEARCH_PRECISION
        } else {
            succeeded + gap / 2
        };
        candidate &= !((2 << 20) - 1);
        if candidate <= succeeded {
            break;
        }
    }
    Ok(succeeded)
}

/// The workspace PyTorch gives each cuBLAS handle: CUBLAS_WORKSPACE_CONFIG when valid, else its
/// default for this compute capability.
fn cublas_workspace_size(compute_capability: (u32, u32), vars: &[(String, String)]) -> (u64, String) {
    let configured = vars.iter().find(|(name, _)| name == "CUBLAS_WORKSPACE_CONFIG").map(|(_, value)| value);
    if let Some(value) = configured
        && let Ok(size) = cublas_workspace::parse(value)
    {
        return (size, format!("CUBLAS_WORKSPACE_CONFIG={value}"));
    }
    let (major, minor) = compute_capability;
    (
        cublas_workspace::pytorch_default_bytes(compute_capability),
        format!("PyTorch's default for compute capability {major}.{minor}"),
    )
}

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

fn torch_check(
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

    #[test]
    fn allocation_search_finds_the_limit_within_precision() {
        for limit in [0u64, 10 << 20, 1 << 30, 79 << 30, (80 << 30) - 5] {
            let free = 80u64 << 30;
            let mut attempts = 0;
            let found = largest_allocation(free, |size| {
                attempts += 1;
                Ok(size <= limit)
            })
            .unwrap();
            assert!(found <= limit, "{limit}: found {found}");
            assert!(
                limit - found <= ALLOCATION_SEARCH_PRECISION || limit < ALLOCATION_SEARCH_PRECISION,
                "{limit}: {found}"
            );
            assert!(attempts <= ALLOCATION_SEARCH_STEPS);
        }
        assert_eq!(largest_allocation(1 << 30, |_| Ok(true)).unwrap(), 1 << 30);
        assert_eq!(largest_allocation(1 << 30, |_| Err("boom".into())).unwrap_err(), "boom");
    }

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

    #[test]
    fn old_gpus_have_no_kernels_in_new_cuda_builds() {
        let properties = DeviceProperties {
            device: 0,
            name: "Tesla V100".into(),
            uuid: "GPU-x".into(),
            compute_capability: (7, 0),
            total_bytes: 16 << 30,
        };
        let torch = |cuda: &str| TorchInfo {
            python: String::new(),
            version_file: None,
            version: None,
            cuda: Some(cuda.into()),
        };
        let check = device_check(&properties, Some(&torch("13.0")));
        assert_eq!((check.verdict, check.knowledge.as_deref()), (Verdict::Fail, Some("cuda/no-kernel-image")));
        assert_eq!(device_check(&properties, Some(&torch("12.8"))).verdict, Verdict::Ok);
        assert!(device_check(&properties, None).summary.contains("no native bf16"));
    }

    #[test]
    fn workspace_follows_the_environment() {
        let vars = vec![("CUBLAS_WORKSPACE_CONFIG".to_owned(), ":16:8".to_owned())];
        assert_eq!(cublas_workspace_size((9, 0), &vars).0, 128 * 1024);
        assert_eq!(cublas_workspace_size((9, 0), &[]).0, 32 << 20);
        let invalid = vec![("CUBLAS_WORKSPACE_CONFIG".to_owned(), "4096".to_owned())];
        assert_eq!(cublas_workspace_size((8, 0), &invalid).0, 8_519_680);
    }

    #[test]
    fn missing_device_names_the_visible_range() {
        let vars = vec![("CUDA_VISIBLE_DEVICES".to_owned(), "2,3".to_owned())];
        assert_eq!(
            missing_device_message(3, 2, &vars),
            "device 3 does not exist: 2 devices are visible with CUDA_VISIBLE_DEVICES=2,3, numbered 0 to 1"
        );
    }
}
