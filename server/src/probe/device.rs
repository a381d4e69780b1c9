//! One device: its properties, who else holds its memory, what is free, the largest allocation
//! that succeeds, and cuBLAS health on it.

use std::path::PathBuf;

use super::driver::{self, Context, DeviceProperties};
use super::format::bytes;
use super::libraries::{self, CudaLibrary, LibraryStatus};
use super::nvml::NvmlSession;
use super::report::{Check, DeviceReport, TorchInfo};
use super::{OpenedDriver, ProbeOptions, cublas, python};
use crate::cuda_env::cublas_workspace;

/// Other processes holding at least this much, or this share of the device, make a warning.
const OTHER_PROCESSES_WARN_BYTES: u64 = 1 << 30;
const OTHER_PROCESSES_WARN_SHARE: f64 = 0.05;
/// Free memory below this share of the total makes a warning.
const LOW_FREE_SHARE: f64 = 0.8;
/// The largest-allocation search stops when its bracket is this narrow.
const ALLOCATION_SEARCH_PRECISION: u64 = 64 << 20;
/// ... or after this many allocations, whichever comes first.
const ALLOCATION_SEARCH_STEPS: usize = 16;

/// cuBLAS and cuBLASLt, loaded once for all devices.
pub(super) struct Libraries {
    cublas: LibraryStatus,
    cublas_lt: LibraryStatus,
}

impl Libraries {
    pub(super) fn load(python_dirs: &[PathBuf]) -> Self {
        // cuBLAS needs cuBLASLt, so the copy beside it goes first.
        let cublas_lt = libraries::load(CudaLibrary::CublasLt, python_dirs);
        let cublas = libraries::load(CudaLibrary::Cublas, python_dirs);
        Self { cublas, cublas_lt }
    }

    pub(super) fn missing() -> Self {
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

pub(super) fn probe_device(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::report::Verdict;

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
}
