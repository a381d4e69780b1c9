//! The CUDA driver API through cudarc, loaded at run time. Each function checks that libcuda is
//! present before the first call (cudarc panics otherwise) and runs inside [`guarded`].

use std::ffi::c_int;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdevice, CUdevice_attribute};

use super::guard::guarded;

/// A driver call that failed, with the CUDA error name when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverFailure {
    /// e.g. `CUDA_ERROR_NO_DEVICE`; `None` when the bindings panicked.
    pub code: Option<String>,
    pub message: String,
}

impl DriverFailure {
    fn from_error(call: &str, error: DriverError) -> Self {
        let code = format!("{:?}", error.0);
        let description =
            guarded("cuGetErrorString", || error.error_string().map(|s| s.to_string_lossy().into_owned()))
                .ok()
                .and_then(Result::ok);
        let message = match description {
            Some(description) => format!("{call} failed with {code} ({description})"),
            None => format!("{call} failed with {code}"),
        };
        Self { code: Some(code), message }
    }

    fn from_panic(message: String) -> Self {
        Self { code: None, message }
    }

    pub fn is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }
}

impl std::fmt::Display for DriverFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Run a driver call inside the panic guard and name it in errors.
fn call<T>(name: &str, f: impl FnOnce() -> Result<T, DriverError>) -> Result<T, DriverFailure> {
    match guarded(name, f) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(DriverFailure::from_error(name, error)),
        Err(panic) => Err(DriverFailure::from_panic(panic)),
    }
}

/// Whether libcuda can be loaded at all.
pub fn library_present() -> bool {
    // SAFETY: only tries to dlopen the candidate names.
    guarded("loading libcuda", || unsafe { sys::is_culib_present() }).unwrap_or(false)
}

/// `cuInit(0)`. Call only after [`library_present`].
pub fn init() -> Result<(), DriverFailure> {
    call("cuInit", result::init)
}

/// The highest CUDA version the driver supports, as (major, minor).
pub fn cuda_version() -> Result<(u32, u32), DriverFailure> {
    let version = call("cuDriverGetVersion", || {
        let mut version: c_int = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut version) }.result().map(|()| version)
    })?;
    let version = u32::try_from(version).unwrap_or(0);
    Ok((version / 1000, (version % 1000) / 10))
}

pub fn device_count() -> Result<usize, DriverFailure> {
    call("cuDeviceGetCount", result::device::get_count).map(|n| usize::try_from(n).unwrap_or(0))
}

/// What the driver says about a device without creating a context on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    pub device: CUdevice,
    pub name: String,
    pub uuid: String,
    pub compute_capability: (u32, u32),
    pub total_bytes: u64,
}

pub fn device_properties(ordinal: usize) -> Result<DeviceProperties, DriverFailure> {
    let ordinal = c_int::try_from(ordinal).unwrap_or(c_int::MAX);
    let device = call("cuDeviceGet", || result::device::get(ordinal))?;
    let name = call("cuDeviceGetName", || result::device::get_name(device))?;
    let uuid = call("cuDeviceGetUuid", || result::device::get_uuid(device))?;
    let attribute = |attribute: CUdevice_attribute| {
        // SAFETY: `device` came from cuDeviceGet.
        call("cuDeviceGetAttribute", || unsafe { result::device::get_attribute(device, attribute) })
            .map(|value| u32::try_from(value).unwrap_or(0))
    };
    let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    // SAFETY: `device` came from cuDeviceGet.
    let total = call("cuDeviceTotalMem", || unsafe { result::device::total_mem(device) })?;
    let uuid_bytes: Vec<u8> = uuid.bytes.iter().map(|b| *b as u8).collect();
    Ok(DeviceProperties {
        device,
        name,
        uuid: format_uuid(&uuid_bytes),
        compute_capability: (major, minor),
        total_bytes: total as u64,
    })
}

/// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, the form nvidia-smi and NVML use.
fn format_uuid(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if hex.len() != 32 {
        return format!("GPU-{hex}");
    }
    format!("GPU-{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// The device's primary context, current on this thread while the value lives. The primary
/// context is the one PyTorch uses, so what it costs is what a training job pays too.
pub struct Context {
    device: CUdevice,
}

impl Context {
    pub fn open(device: CUdevice) -> Result<Self, DriverFailure> {
        // SAFETY: `device` came from cuDeviceGet; the context is released in Drop.
        let context = call("cuDevicePrimaryCtxRetain", || unsafe { result::primary_ctx::retain(device) })?;
        let opened = Self { device };
        // SAFETY: `context` is a live primary context.
        call("cuCtxSetCurrent", || unsafe { result::ctx::set_current(context) })?;
        Ok(opened)
    }

    /// (free, total) bytes of the device, as the driver sees them now.
    pub fn memory_info(&self) -> Result<(u64, u64), DriverFailure> {
        call("cuMemGetInfo", result::mem_get_info).map(|(free, total)| (free as u64, total as u64))
    }

    /// Allocate `bytes` and free them again at once. `Ok(false)` means out of memory.
    pub fn try_allocation(&self, bytes: u64) -> Result<bool, DriverFailure> {
        match self.allocate(bytes) {
            Ok(allocation) => {
                allocation.free()?;
                Ok(true)
            }
            Err(failure) if failure.is("CUDA_ERROR_OUT_OF_MEMORY") => Ok(false),
            Err(failure) => Err(failure),
        }
    }

    /// A device allocation that is freed when dropped.
    pub fn allocate(&self, bytes: u64) -> Result<Allocation, DriverFailure> {
        let size = usize::try_from(bytes).unwrap_or(usize::MAX);
        // SAFETY: the memory is never read; it is freed by Allocation.
        let pointer = call("cuMemAlloc", || unsafe { result::malloc_sync(size) })?;
        Ok(Allocation { pointer: Some(pointer) })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        let device = self.device;
        // SAFETY: balances the retain in `open`.
        let _ = call("cuDevicePrimaryCtxRelease", || unsafe { result::primary_ctx::release(device) });
    }
}

pub struct Allocation {
    pointer: Option<sys::CUdeviceptr>,
}

impl Allocation {
    /// Free now, reporting failure (Drop frees silently).
    pub fn free(mut self) -> Result<(), DriverFailure> {
        match self.pointer.take() {
            // SAFETY: allocated by cuMemAlloc and freed once.
            Some(pointer) => call("cuMemFree", || unsafe { result::free_sync(pointer) }),
            None => Ok(()),
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if let Some(pointer) = self.pointer.take() {
            // SAFETY: allocated by cuMemAlloc and freed once.
            let _ = call("cuMemFree", || unsafe { result::free_sync(pointer) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_print_like_nvidia_smi() {
        let bytes: Vec<u8> = (0u8..16).collect();
        assert_eq!(format_uuid(&bytes), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
    }
}
