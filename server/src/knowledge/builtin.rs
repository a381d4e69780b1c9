//! The entry files compiled into the binary. `tests/knowledge.rs` fails when a file under
//! `knowledge/<group>/` is missing from this list, so an entry cannot be forgotten.

macro_rules! entry_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../../../", $path)))
    };
}

/// `(path relative to the repository root, file text)` of every built-in entry.
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    entry_file!("knowledge/cuda/oom-genuine.toml"),
    entry_file!("knowledge/cuda/oom-fragmentation.toml"),
    entry_file!("knowledge/cuda/oom-other-processes.toml"),
    entry_file!("knowledge/cublas/alloc-failed.toml"),
    entry_file!("knowledge/cublas/not-initialized.toml"),
    entry_file!("knowledge/cublas/internal-error.toml"),
    entry_file!("knowledge/cublas/execution-failed.toml"),
    entry_file!("knowledge/cublas/invalid-value.toml"),
    entry_file!("knowledge/cublas/not-supported.toml"),
    entry_file!("knowledge/cuda/illegal-memory-access.toml"),
    entry_file!("knowledge/cuda/launch-failure.toml"),
    entry_file!("knowledge/cuda/ecc-error.toml"),
    entry_file!("knowledge/cuda/device-side-assert.toml"),
    entry_file!("knowledge/cuda/no-kernel-image.toml"),
    entry_file!("knowledge/cuda/driver-too-old.toml"),
    entry_file!("knowledge/cuda/invalid-device-ordinal.toml"),
    entry_file!("knowledge/cuda/not-available.toml"),
    entry_file!("knowledge/cudnn/status-error.toml"),
    entry_file!("knowledge/nccl/unhandled-cuda-error.toml"),
    entry_file!("knowledge/cuda/oom-memory-fraction.toml"),
    entry_file!("knowledge/cuda/oom-outside-allocator.toml"),
    entry_file!("knowledge/cuda/devices-unavailable.toml"),
    entry_file!("knowledge/cuda/device-mismatch.toml"),
    entry_file!("knowledge/cuda/misaligned-address.toml"),
    entry_file!("knowledge/cuda/invalid-address-space.toml"),
    entry_file!("knowledge/nccl/watchdog-timeout.toml"),
    entry_file!("knowledge/nccl/invalid-usage.toml"),
    entry_file!("knowledge/nccl/system-error.toml"),
    entry_file!("knowledge/nccl/internal-error.toml"),
    entry_file!("knowledge/distributed/peer-lost.toml"),
    entry_file!("knowledge/distributed/child-failed.toml"),
    entry_file!("knowledge/distributed/store-timeout.toml"),
];
