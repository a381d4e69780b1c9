//! Processes that hold GPU memory, from NVML (libnvidia-ml, shipped with the driver). NVML numbers
//! devices its own way, so devices are matched by UUID, not by index.

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;

use super::guard::guarded;
use super::report::GpuProcess;

pub struct NvmlSession {
    nvml: Nvml,
}

impl NvmlSession {
    /// Load and initialise NVML; the error says why when it cannot be used.
    pub fn open() -> Result<Self, String> {
        match guarded("nvmlInit", Nvml::init) {
            Ok(Ok(nvml)) => Ok(Self { nvml }),
            Ok(Err(error)) => Err(format!("NVML could not be used (libnvidia-ml.so.1): {error}")),
            Err(panic) => Err(panic),
        }
    }

    pub fn driver_version(&self) -> Option<String> {
        guarded("nvmlSystemGetDriverVersion", || self.nvml.sys_driver_version().ok()).ok().flatten()
    }

    /// Compute processes on the device with this UUID, other than this one.
    pub fn other_processes(&self, uuid: &str) -> Result<Vec<GpuProcess>, String> {
        let own_pid = std::process::id();
        let listed = guarded("nvmlDeviceGetComputeRunningProcesses", || {
            let device = self.nvml.device_by_uuid(uuid)?;
            device.running_compute_processes()
        });
        let processes = match listed {
            Ok(Ok(processes)) => processes,
            Ok(Err(error)) => return Err(format!("NVML could not list the processes on {uuid}: {error}")),
            Err(panic) => return Err(panic),
        };
        Ok(processes
            .into_iter()
            .filter(|process| process.pid != own_pid)
            .map(|process| GpuProcess {
                pid: process.pid,
                name: process_name(process.pid),
                used_bytes: match process.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => Some(bytes),
                    UsedGpuMemory::Unavailable => None,
                },
            })
            .collect())
    }
}

/// The command name of a process, where /proc shows it (not for processes in other containers).
fn process_name(pid: u32) -> Option<String> {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(name.trim().to_owned()).filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process_name() {
        assert!(process_name(std::process::id()).is_some());
        assert_eq!(process_name(u32::MAX), None);
    }

    #[test]
    fn opening_without_nvml_is_an_error_not_a_panic() {
        if let Err(error) = NvmlSession::open() {
            assert!(error.contains("NVML"), "{error}");
        }
    }
}
