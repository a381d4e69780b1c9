//! What a probe found: one verdict per check, the facts behind them, and the exit code.
//! The JSON form of these types is the documented schema `docs/probe-schema.json`.

use serde::{Deserialize, Serialize};

use crate::hardware::HardwareFacts;

/// Version of the JSON layout; bumped on any change that is not an added optional field.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Skipped,
    Warning,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Skipped => "skipped",
            Verdict::Warning => "warning",
            Verdict::Fail => "fail",
        }
    }
}

/// One thing the probe checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, e.g. `cublas.handle`.
    pub id: String,
    pub verdict: Verdict,
    /// One line: what was found.
    pub summary: String,
    /// What to do about it, for warnings and failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Knowledge entry that explains the failure mode, e.g. `cublas/alloc-failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knowledge: Option<String>,
}

impl Check {
    pub fn new(id: &str, verdict: Verdict, summary: impl Into<String>) -> Self {
        Self { id: id.to_owned(), verdict, summary: summary.into(), action: None, knowledge: None }
    }

    pub fn ok(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Verdict::Ok, summary)
    }

    pub fn skipped(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Verdict::Skipped, summary)
    }

    pub fn warning(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Verdict::Warning, summary)
    }

    pub fn fail(id: &str, summary: impl Into<String>) -> Self {
        Self::new(id, Verdict::Fail, summary)
    }

    pub fn action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    pub fn knowledge(mut self, id: &str) -> Self {
        self.knowledge = Some(id.to_owned());
        self
    }
}

/// Why the probe could not look at any GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unavailable {
    /// libcuda is missing or cannot be initialised.
    NoDriver,
    /// The driver works but no device is visible.
    NoGpu,
}

/// The CUDA driver as loaded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DriverInfo {
    /// The file libcuda was loaded from, when known.
    pub library: Option<String>,
    /// Highest CUDA version the driver supports, e.g. `13.0`.
    pub cuda_version: Option<String>,
    /// NVIDIA driver release, e.g. `580.159.04` (from NVML).
    pub driver_version: Option<String>,
}

/// The PyTorch that `python3` (or `--python`) would import.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TorchInfo {
    pub python: String,
    pub version_file: Option<String>,
    pub version: Option<String>,
    /// CUDA version the wheel was built for; `None` for a CPU-only or ROCm build.
    pub cuda: Option<String>,
}

/// A process that holds memory on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    /// Command name from /proc, when readable.
    pub name: Option<String>,
    /// Bytes held; `None` where the driver does not say (containers, Windows).
    pub used_bytes: Option<u64>,
}

/// One CUDA device, numbered as the process sees it (after `CUDA_VISIBLE_DEVICES`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    pub index: usize,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub compute_capability: Option<(u32, u32)>,
    pub bf16: Option<bool>,
    pub total_bytes: Option<u64>,
    /// Free memory as the driver reports it, after the probe's own CUDA context was created.
    pub free_bytes: Option<u64>,
    /// Memory held by other processes, from NVML.
    pub other_processes_bytes: Option<u64>,
    #[serde(default)]
    pub other_processes: Vec<GpuProcess>,
    /// The largest single allocation that succeeded (absent with `--quick`).
    pub largest_allocation_bytes: Option<u64>,
    pub checks: Vec<Check>,
}

impl DeviceReport {
    pub fn new(index: usize) -> Self {
        Self {
            index,
            name: None,
            uuid: None,
            compute_capability: None,
            bf16: None,
            total_bytes: None,
            free_bytes: None,
            other_processes_bytes: None,
            other_processes: Vec::new(),
            largest_allocation_bytes: None,
            checks: Vec::new(),
        }
    }
}

/// Everything one probe found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    pub schema_version: u32,
    pub culint_version: String,
    /// Set when no GPU could be examined; `reason` then says why in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<Unavailable>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub driver: DriverInfo,
    /// Devices visible to this process.
    pub device_count: usize,
    /// The devices examined: all of them, or the one `--device` picked.
    pub devices: Vec<DeviceReport>,
    pub torch: Option<TorchInfo>,
    /// Checks that concern the machine rather than one device.
    pub checks: Vec<Check>,
    pub quick: bool,
    pub elapsed_ms: u64,
}

/// Exit codes of `culint probe`.
pub const EXIT_ALL_PASS: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_NO_GPU: u8 = 3;

impl ProbeReport {
    pub fn new(quick: bool) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            culint_version: env!("CARGO_PKG_VERSION").to_owned(),
            unavailable: None,
            reason: None,
            driver: DriverInfo::default(),
            device_count: 0,
            devices: Vec::new(),
            torch: None,
            checks: Vec::new(),
            quick,
            elapsed_ms: 0,
        }
    }

    /// Every check, machine-wide first, then device by device.
    pub fn all_checks(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().chain(self.devices.iter().flat_map(|device| device.checks.iter()))
    }

    /// The worst verdict of any check (`Ok` when there are none).
    pub fn worst_verdict(&self) -> Verdict {
        self.all_checks().map(|check| check.verdict).max().unwrap_or(Verdict::Ok)
    }

    /// 0 when everything passed, 1 when a check warns or fails, 3 when there is no driver or GPU.
    pub fn exit_code(&self) -> u8 {
        if self.unavailable.is_some() {
            EXIT_NO_GPU
        } else if self.worst_verdict() >= Verdict::Warning {
            EXIT_FINDINGS
        } else {
            EXIT_ALL_PASS
        }
    }

    /// Free memory per examined device, as (index, bytes).
    pub fn free_memory(&self) -> Vec<(usize, Option<u64>)> {
        self.devices.iter().map(|device| (device.index, device.free_bytes)).collect()
    }

    /// Facts for the hardware-aware rules: the visible device count and the first examined
    /// device's memory and compute capability. `None` when no device was examined.
    pub fn hardware_facts(&self) -> Option<HardwareFacts> {
        let device = self.devices.first()?;
        Some(HardwareFacts {
            gpus: Some(self.device_count),
            memory_bytes: device.total_bytes,
            compute_capability: device.compute_capability,
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a probe report always serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_code_follows_the_worst_verdict() {
        let mut report = ProbeReport::new(false);
        report.checks.push(Check::ok("a", "fine"));
        report.checks.push(Check::skipped("b", "no NVML"));
        assert_eq!(report.exit_code(), EXIT_ALL_PASS);
        let mut device = DeviceReport::new(0);
        device.checks.push(Check::warning("c", "busy"));
        report.devices.push(device);
        assert_eq!(report.exit_code(), EXIT_FINDINGS);
        report.unavailable = Some(Unavailable::NoDriver);
        assert_eq!(report.exit_code(), EXIT_NO_GPU);
    }

    #[test]
    fn hardware_facts_come_from_the_first_examined_device() {
        let mut report = ProbeReport::new(true);
        assert_eq!(report.hardware_facts(), None);
        report.device_count = 2;
        let mut device = DeviceReport::new(1);
        device.total_bytes = Some(80 << 30);
        device.compute_capability = Some((9, 0));
        report.devices.push(device);
        let facts = report.hardware_facts().unwrap();
        assert_eq!(facts.gpus, Some(2));
        assert_eq!(facts.memory_bytes, Some(80 << 30));
        assert_eq!(facts.supports_bf16(), Some(true));
    }
}
