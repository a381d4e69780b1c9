//! Facts about the GPUs a script will run on, from a live probe or from `--gpus`/`--gpu-memory`.
//! The hardware-aware rules (CUL8xx) and CUL302's fix read them.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareFacts {
    /// Visible CUDA devices.
    pub gpus: Option<usize>,
    /// Total memory of one device, in bytes.
    pub memory_bytes: Option<u64>,
    /// Compute capability (major, minor) of the device the script will use.
    pub compute_capability: Option<(u32, u32)>,
}

impl HardwareFacts {
    /// bf16 is native from compute capability 8.0 (Ampere) on.
    pub fn supports_bf16(&self) -> Option<bool> {
        self.compute_capability.map(|(major, _)| major >= 8)
    }
}
