//! cuBLAS health on one device: a handle created and destroyed (what fails with
//! `CUBLAS_STATUS_NOT_INITIALIZED` / `INTERNAL_ERROR` in a training job), and a cuBLASLt heuristic
//! query for a typical bf16 GEMM, with no workspace and with the workspace PyTorch allocates
//! (what fails with `CUBLAS_STATUS_ALLOC_FAILED` when the device is full).

use std::ffi::{c_int, c_void};

use cudarc::cublas::result as cublas;
use cudarc::cublaslt::result::{self as lt, CublasError};
use cudarc::cublaslt::sys::{
    self as lt_sys, cublasComputeType_t, cublasLtMatmulHeuristicResult_t, cublasLtMatmulPreferenceAttributes_t,
    cudaDataType,
};

use super::driver::Context;
use super::guard::guarded;
use super::report::Check;
use crate::probe::format::bytes;

/// The GEMM the heuristic query asks about: bf16 inputs and output, fp32 accumulation, the shape
/// of a large transformer projection.
pub const GEMM_SIZE: u64 = 4096;
/// How many algorithms the heuristic is asked for.
const REQUESTED_ALGORITHMS: usize = 8;

/// The status name of a failed cuBLAS or cuBLASLt call, e.g. `CUBLAS_STATUS_ALLOC_FAILED`.
fn status_name(status: impl std::fmt::Debug) -> String {
    format!("{status:?}")
}

/// The knowledge entry and advice for a failing cuBLAS status.
fn explain(check: Check, status: &str) -> Check {
    match status {
        "CUBLAS_STATUS_NOT_INITIALIZED" => check.knowledge("cublas/not-initialized").action(
            "cuBLAS could not set itself up on this device: usually the device had no memory left for it, or the driver is older than this cuBLAS. Free device memory (see the memory checks) or update the driver.",
        ),
        "CUBLAS_STATUS_ALLOC_FAILED" => check.knowledge("cublas/alloc-failed").action(
            "cuBLAS could not allocate its workspace: free device memory (other processes, a smaller batch) before the first matmul.",
        ),
        "CUBLAS_STATUS_INTERNAL_ERROR" => check.knowledge("cublas/internal-error").action(
            "An internal cuBLAS failure, usually a driver/library mismatch or an earlier CUDA error on this device. Check the driver and CUDA version checks, then rerun with CUDA_LAUNCH_BLOCKING=1.",
        ),
        _ => check,
    }
}

/// Create and destroy a cuBLAS handle on the current context.
pub fn handle_check(_context: &Context, library: &str) -> Check {
    const ID: &str = "cublas.handle";
    let created = guarded("cublasCreate", cublas::create_handle);
    let handle = match created {
        Ok(Ok(handle)) => handle,
        Ok(Err(error)) => {
            let status = status_name(error.0);
            return explain(Check::fail(ID, format!("cublasCreate failed with {status} ({library})")), &status);
        }
        Err(panic) => return Check::fail(ID, panic).knowledge("cublas/not-initialized"),
    };
    let mut version: c_int = 0;
    // SAFETY: `handle` is live; writes one int.
    let _ = guarded("cublasGetVersion", || unsafe { cudarc::cublas::sys::cublasGetVersion_v2(handle, &mut version) });
    // SAFETY: `handle` is live and destroyed once.
    let destroyed = guarded("cublasDestroy", || unsafe { cublas::destroy_handle(handle) });
    match destroyed {
        Ok(Ok(())) => {
            Check::ok(ID, format!("cuBLAS {} handle created and destroyed ({library})", version_text(version)))
        }
        Ok(Err(error)) => {
            let status = status_name(error.0);
            explain(Check::fail(ID, format!("cublasDestroy failed with {status} ({library})")), &status)
        }
        Err(panic) => Check::fail(ID, panic),
    }
}

/// `130002` → `13.0.2`.
pub fn version_text(version: c_int) -> String {
    if version <= 0 {
        return "(version unknown)".to_owned();
    }
    format!("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100)
}

/// The cuBLASLt descriptors of the probe GEMM, destroyed on drop.
struct GemmDescriptors {
    operation: lt_sys::cublasLtMatmulDesc_t,
    layouts: Vec<lt_sys::cublasLtMatrixLayout_t>,
}

impl GemmDescriptors {
    fn new() -> Result<Self, CublasError> {
        let operation = lt::create_matmul_desc(cublasComputeType_t::CUBLAS_COMPUTE_32F, cudaDataType::CUDA_R_32F)?;
        let mut descriptors = Self { operation, layouts: Vec::new() };
        // Column-major A (m×k), B (k×n), C and D (m×n), all square here.
        for _ in 0..3 {
            let layout = lt::create_matrix_layout(cudaDataType::CUDA_R_16BF, GEMM_SIZE, GEMM_SIZE, GEMM_SIZE as i64)?;
            descriptors.layouts.push(layout);
        }
        Ok(descriptors)
    }

    /// Number of algorithms the heuristic offers within `workspace` bytes, and the workspace the
    /// best one wants.
    fn heuristic(&self, handle: lt_sys::cublasLtHandle_t, workspace: u64) -> Result<(usize, u64), CublasError> {
        let preference = lt::create_matmul_pref()?;
        // SAFETY: `preference` is live; the attribute is a u64 read by value.
        let result = unsafe {
            lt::set_matmul_pref_attribute(
                preference,
                cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&workspace as *const u64).cast::<c_void>(),
                size_of::<u64>(),
            )
            .and_then(|()| {
                // SAFETY: all-zero bytes are a valid heuristic result (status 0 = success).
                let mut results: [cublasLtMatmulHeuristicResult_t; REQUESTED_ALGORITHMS] = std::mem::zeroed();
                let mut returned: c_int = 0;
                let [a, b, c] = self.layouts[..] else { unreachable!("three layouts") };
                lt_sys::cublasLtMatmulAlgoGetHeuristic(
                    handle,
                    self.operation,
                    a,
                    b,
                    c,
                    c,
                    preference,
                    REQUESTED_ALGORITHMS as c_int,
                    results.as_mut_ptr(),
                    &mut returned,
                )
                .result()?;
                let returned = usize::try_from(returned).unwrap_or(0).min(REQUESTED_ALGORITHMS);
                Ok((returned, results.first().filter(|_| returned > 0).map_or(0, |best| best.workspaceSize as u64)))
            })
        };
        // SAFETY: created above, destroyed once.
        let _ = unsafe { lt::destroy_matmul_pref(preference) };
        result
    }
}

impl Drop for GemmDescriptors {
    fn drop(&mut self) {
        for layout in self.layouts.drain(..) {
            // SAFETY: created in `new`, destroyed once.
            let _ = unsafe { lt::destroy_matrix_layout(layout) };
        }
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { lt::destroy_matmul_desc(self.operation) };
    }
}

/// A cuBLASLt handle plus heuristic queries for the probe GEMM, with no workspace and with
/// `workspace` bytes actually allocated on the device.
pub fn heuristic_check(context: &Context, library: &str, workspace: u64, workspace_origin: &str) -> Check {
    const ID: &str = "cublaslt.heuristic";
    let shape = format!("bf16 {GEMM_SIZE}x{GEMM_SIZE}x{GEMM_SIZE} GEMM");
    let outcome = guarded("cuBLASLt heuristic query", || -> Result<Check, String> {
        let handle = lt::create_handle().map_err(|e| format!("cublasLtCreate failed with {}", status_name(e.0)))?;
        let outcome = (|| {
            let descriptors =
                GemmDescriptors::new().map_err(|e| format!("creating descriptors failed with {}", status_name(e.0)))?;
            let (without, _) = descriptors.heuristic(handle, 0).map_err(|e| {
                format!("cublasLtMatmulAlgoGetHeuristic (no workspace) failed with {}", status_name(e.0))
            })?;
            let buffer = match context.allocate(workspace) {
                Ok(buffer) => buffer,
                Err(failure) if failure.is("CUDA_ERROR_OUT_OF_MEMORY") => {
                    return Ok(Check::fail(
                        ID,
                        format!(
                            "the {} cuBLAS workspace ({workspace_origin}) could not be allocated: the device is out of memory, which PyTorch reports as CUBLAS_STATUS_ALLOC_FAILED",
                            bytes(workspace)
                        ),
                    )
                    .knowledge("cublas/alloc-failed")
                    .action("Free device memory before the first matmul: stop other processes on this GPU, or lower the batch size."));
                }
                Err(failure) => return Err(failure.to_string()),
            };
            let (with, best_workspace) = descriptors.heuristic(handle, workspace).map_err(|e| {
                format!(
                    "cublasLtMatmulAlgoGetHeuristic ({} workspace) failed with {}",
                    bytes(workspace),
                    status_name(e.0)
                )
            })?;
            buffer.free().map_err(|failure| failure.to_string())?;
            Ok(if with == 0 {
                Check::fail(ID, format!("cuBLASLt offers no algorithm for a {shape} on this device ({library})"))
                    .knowledge("cublas/not-supported")
                    .action(
                        "Update the driver and the cuBLAS that PyTorch uses; this GPU may be newer than this cuBLAS.",
                    )
            } else if without == 0 {
                Check::warning(ID, format!(
                    "cuBLASLt needs a workspace for a {shape}: {with} algorithms with the {} workspace, none without ({library})",
                    bytes(workspace)
                ))
                .knowledge("cublas/alloc-failed")
                .action("Keep CUBLAS_WORKSPACE_CONFIG at its default or larger; a zero workspace leaves cuBLASLt nothing to run.")
            } else {
                Check::ok(
                    ID,
                    format!(
                        "cuBLASLt heuristic for a {shape}: {without} algorithms without workspace, {with} with the {} workspace ({workspace_origin}); the best needs {} of it ({library})",
                        bytes(workspace),
                        bytes(best_workspace)
                    ),
                )
            })
        })();
        // SAFETY: created above, destroyed once.
        let _ = unsafe { lt::destroy_handle(handle) };
        outcome
    });
    match outcome {
        Ok(Ok(check)) => check,
        Ok(Err(message)) => {
            let status =
                ["CUBLAS_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_INTERNAL_ERROR"]
                    .into_iter()
                    .find(|status| message.contains(status))
                    .unwrap_or_default();
            explain(Check::fail(ID, format!("{message} ({library})")), status)
        }
        Err(panic) => Check::fail(ID, panic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_like_nvidia_writes_them() {
        assert_eq!(version_text(130002), "13.0.2");
        assert_eq!(version_text(120804), "12.8.4");
        assert_eq!(version_text(0), "(version unknown)");
    }

    #[test]
    fn failing_statuses_link_the_knowledge_entries() {
        let check = explain(Check::fail("x", "y"), "CUBLAS_STATUS_ALLOC_FAILED");
        assert_eq!(check.knowledge.as_deref(), Some("cublas/alloc-failed"));
        let check = explain(Check::fail("x", "y"), "CUBLAS_STATUS_INTERNAL_ERROR");
        assert_eq!(check.knowledge.as_deref(), Some("cublas/internal-error"));
        assert!(explain(Check::fail("x", "y"), "CUBLAS_STATUS_NOT_INITIALIZED").action.is_some());
    }
}
