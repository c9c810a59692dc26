"""Residual add fused into LayerNorm with a CuPy RawKernel: one block per row, the row's sum kept in shared
memory, so x + residual is never written to global memory."""

import cupy
import torch
import torch.nn as nn

_SOURCE = r"""
// Rows of at most 8192 floats: 32 KiB of shared memory per block.
extern "C" __global__ void add_layernorm(const float* __restrict__ x, const float* __restrict__ r,
                                         const float* __restrict__ w, const float* __restrict__ b,
                                         float* __restrict__ y, int dim, float eps) {
    extern __shared__ float row[];
    __shared__ float partial[32];
    const long long base = (long long)blockIdx.x * dim;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;

    float sum = 0.0f;
    for (int j = threadIdx.x; j < dim; j += blockDim.x) {
        const float v = x[base + j] + r[base + j];
        row[j] = v;
        sum += v;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    sum = lane < warps ? partial[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float mean = sum / dim;
    __syncthreads();  // partial[] is reused below

    float sq = 0.0f;
    for (int j = threadIdx.x; j < dim; j += blockDim.x) {
        const float d = row[j] - mean;
        sq += d * d;
    }
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    if (lane == 0) partial[warp] = sq;
    __syncthreads();
    sq = lane < warps ? partial[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    const float rstd = rsqrtf(sq / dim + eps);

    for (int j = threadIdx.x; j < dim; j += blockDim.x)
        y[base + j] = (row[j] - mean) * rstd * w[j] + b[j];
}
"""
_kernel = cupy.RawKernel(_SOURCE, "add_layernorm")


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        dim = x.shape[-1]
        if dim > 8192:
            raise ValueError("this kernel keeps a row in 32 KiB of shared memory: rows of at most 8192 floats")
        rows = x.numel() // dim
        y = torch.empty_like(x)
        args = (cupy.uint64(x.data_ptr()), cupy.uint64(residual.data_ptr()), cupy.uint64(self.norm.weight.data_ptr()),
                cupy.uint64(self.norm.bias.data_ptr()), cupy.uint64(y.data_ptr()), cupy.int32(dim),
                cupy.float32(self.norm.eps))
        with cupy.cuda.ExternalStream(torch.cuda.current_stream(x.device).cuda_stream):
            _kernel((rows,), (256,), args, shared_mem=dim * 4)
        return y
