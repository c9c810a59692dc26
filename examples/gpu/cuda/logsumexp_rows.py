"""Row log-sum-exp in one read: the row sits in registers (1024 threads x 8 float4), max then sum."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = """
torch::Tensor logsumexp_rows(torch::Tensor x);
"""

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>
#include <cmath>
static void check_cuda(const torch::Tensor& t, const char* what, c10::ScalarType dtype) {
    TORCH_CHECK(t.is_cuda(), what, " must be a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == dtype, what, " has the wrong dtype");
    TORCH_CHECK(t.is_contiguous(), what, " must be contiguous");
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Block-wide reductions; every thread gets the result. `scratch` holds 32 floats; the trailing
// __syncthreads lets the caller reuse it at once.
__device__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}
__device__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : -INFINITY;
    v = warp_max(v);
    __syncthreads();
    return v;
}

constexpr int THREADS = 1024, VEC = 8;

__global__ void __launch_bounds__(THREADS) logsumexp_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[32];
    const size_t row = blockIdx.x;
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    const int n4 = cols / 4;
    float4 v[VEC];
    float m = -INFINITY;
    #pragma unroll
    for (int i = 0; i < VEC; ++i) {
        const int c = threadIdx.x + i * THREADS;
        v[i] = c < n4 ? xr[c] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    }
    m = block_max(m, scratch);
    if (isinf(m)) {  // all -inf gives -inf, any +inf gives +inf, as torch.logsumexp does
        if (threadIdx.x == 0) y[row] = m;
        return;
    }
    float s = 0.0f;
    #pragma unroll
    for (int i = 0; i < VEC; ++i)
        s += (expf(v[i].x - m) + expf(v[i].y - m)) + (expf(v[i].z - m) + expf(v[i].w - m));
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) y[row] = m + logf(s);
}

torch::Tensor logsumexp_rows(torch::Tensor x) {
    check_cuda(x, "x", torch::kFloat32);
    TORCH_CHECK(x.dim() == 2, "x must be 2-D");
    const int64_t rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols % 4 == 0 && cols <= THREADS * VEC * 4, "rows must be a multiple of 4 and at most 32768 long");
    auto y = torch::empty({rows, 1}, x.options());
    logsumexp_kernel<<<rows, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kh_logsumexp_rows_cuda",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=['logsumexp_rows'],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.logsumexp_rows(x.contiguous())
