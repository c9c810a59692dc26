"""Exact GELU with a CuPy RawKernel launched on PyTorch's current stream."""

import cupy
import torch
import torch.nn as nn

_SOURCE = r"""
extern "C" __global__ void gelu_erf(const float* __restrict__ x, float* __restrict__ y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
"""
_kernel = cupy.RawKernel(_SOURCE, "gelu_erf")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        blocks = min((n + 255) // 256, 132 * 32)
        # Launch on the stream PyTorch (and the evaluator's timer) is using.
        with cupy.cuda.ExternalStream(torch.cuda.current_stream(x.device).cuda_stream):
            _kernel((blocks,), (256,), (cupy.uint64(x.data_ptr()), cupy.uint64(y.data_ptr()), cupy.int64(n)))
        return y
