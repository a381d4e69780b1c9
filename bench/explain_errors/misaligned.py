"""Custom kernels (through CuPy, as an extension would) that read a misaligned address or use
the wrong address space; PyTorch reports the error at its next synchronisation."""

import sys

import cupy
import torch

from common import versions

versions()
case = sys.argv[1]
data = torch.zeros(1024, dtype=torch.uint8, device="cuda")
if case == "misaligned":
    source = r"""
extern "C" __global__ void read8(const unsigned char* base, long long* out) {
    out[0] = *(const long long*)(base + 1);
}"""
    kernel = cupy.RawKernel(source, "read8")
elif case == "address-space":
    source = r"""
extern "C" __global__ void local_atomic(int* out) {
    int local[4];
    local[threadIdx.x % 4] = threadIdx.x;
    int* generic = &local[threadIdx.x % 4];
    int old;
    asm volatile("atom.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(generic) : "memory");
    out[threadIdx.x] = old + local[(threadIdx.x + 1) % 4];
}"""
    kernel = cupy.RawKernel(source, "local_atomic")
else:
    raise SystemExit(f"unknown case {case}")
out = torch.zeros(64, dtype=torch.int64, device="cuda")
stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
with stream:
    if case == "misaligned":
        kernel((1,), (1,), (data.data_ptr(), out.data_ptr()))
    else:
        kernel((1,), (32,), (out.data_ptr(),))
torch.cuda.synchronize()
print("no error", out[0].item())
