"""Scale, causal mask and softmax fused: one warp per row, the row in registers, masked entries written as 0."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = """
torch::Tensor scale_mask_softmax(torch::Tensor s, double scale);
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

constexpr int VEC = 8;  // rows up to 32 lanes * 8 float4 = 1024 long

__global__ void __launch_bounds__(256) mask_softmax_kernel(const float* __restrict__ s, float* __restrict__ y,
                                                           int64_t rows, int T, float scale) {
    const int64_t row = blockIdx.x * 8 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const int q = row % T;  // query position: keys 0..q are visible
    const float4* sr = reinterpret_cast<const float4*>(s + row * T);
    float4* yr = reinterpret_cast<float4*>(y + row * T);
    const int n4 = T / 4;
    float v[VEC][4];
    float m = -INFINITY;
    #pragma unroll
    for (int i = 0; i < VEC; ++i) {
        const int c = lane + i * 32;
        float4 z = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        if (c < n4 && 4 * c <= q) z = sr[c];  // float4s wholly in the future are not read
        const float in[4] = {z.x, z.y, z.z, z.w};
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
            v[i][e] = 4 * c + e <= q ? in[e] * scale : -INFINITY;
            m = fmaxf(m, v[i][e]);
        }
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.0f;
    #pragma unroll
    for (int i = 0; i < VEC; ++i)
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
            v[i][e] = expf(v[i][e] - m);  // exp(-inf) = 0 for the masked ones
            sum += v[i][e];
        }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.0f / sum;
    #pragma unroll
    for (int i = 0; i < VEC; ++i) {
        const int c = lane + i * 32;
        if (c < n4) yr[c] = make_float4(v[i][0] * inv, v[i][1] * inv, v[i][2] * inv, v[i][3] * inv);
    }
}

torch::Tensor scale_mask_softmax(torch::Tensor s, double scale) {
    check_cuda(s, "scores", torch::kFloat32);
    TORCH_CHECK(s.dim() >= 2 && s.size(-1) == s.size(-2), "scores must end in a square (seq x seq) matrix");
    const int T = s.size(-1);
    TORCH_CHECK(T % 4 == 0 && T <= 32 * VEC * 4, "seq must be a multiple of 4 and at most 1024");
    const int64_t rows = s.numel() / T;
    auto y = torch::empty_like(s);
    mask_softmax_kernel<<<(rows + 7) / 8, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        s.data_ptr<float>(), y.data_ptr<float>(), rows, T, (float)scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kh_scale_mask_softmax_cuda",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=['scale_mask_softmax'],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, seq, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        return _ext.scale_mask_softmax(scores.contiguous(), self.scale)
