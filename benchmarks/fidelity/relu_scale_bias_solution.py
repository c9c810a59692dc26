"""One fused pass: float4 loads, the column's bias read through the cache."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor relu_scale_bias(torch::Tensor x, torch::Tensor bias, double scale);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void fused_kernel(const float4* __restrict__ x, const float4* __restrict__ bias, float4* __restrict__ y,
                             int64_t n4, int64_t columns4, float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        const float4 b = __ldg(&bias[i % columns4]);
        y[i] = make_float4(fmaxf(v.x, 0.f) * scale + b.x, fmaxf(v.y, 0.f) * scale + b.y,
                           fmaxf(v.z, 0.f) * scale + b.z, fmaxf(v.w, 0.f) * scale + b.w);
    }
}

torch::Tensor relu_scale_bias(torch::Tensor x, torch::Tensor bias, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2);
    const int64_t columns = x.size(1);
    TORCH_CHECK(columns % 4 == 0 && bias.numel() == columns, "columns must be a multiple of 4");
    auto y = torch::empty_like(x);
    const int64_t n4 = x.numel() / 4;
    const int64_t blocks = std::min<int64_t>((n4 + 255) / 256, 132 * 32);
    fused_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()), reinterpret_cast<const float4*>(bias.data_ptr<float>()),
        reinterpret_cast<float4*>(y.data_ptr<float>()), n4, columns / 4, (float)scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_fidelity_relu_scale_bias", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["relu_scale_bias"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, scale, columns):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(columns))

    def forward(self, x):
        return _ext.relu_scale_bias(x.contiguous(), self.bias.contiguous(), self.scale)
