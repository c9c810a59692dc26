"""For KernelBench level1/5_Matrix_scalar_multiplication: C = A * s, float4 loads and stores."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor scale(torch::Tensor a, double s);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void scale_kernel(const float4* __restrict__ a, float4* __restrict__ c, int64_t n4, float s) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        const float4 v = a[i];
        c[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
    }
}

__global__ void scale_tail(const float* __restrict__ a, float* __restrict__ c, int64_t start, int64_t n, float s) {
    const int64_t i = start + threadIdx.x;
    if (i < n) c[i] = a[i] * s;
}

torch::Tensor scale(torch::Tensor a, double s) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kFloat32 && a.is_contiguous());
    auto c = torch::empty_like(a);
    const int64_t n = a.numel(), n4 = n / 4;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0) {
        const int64_t blocks = std::min<int64_t>((n4 + 255) / 256, 132 * 32);
        scale_kernel<<<blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(a.data_ptr<float>()),
                                                 reinterpret_cast<float4*>(c.data_ptr<float>()), n4, (float)s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (n % 4) {
        scale_tail<<<1, 4, 0, stream>>>(a.data_ptr<float>(), c.data_ptr<float>(), n4 * 4, n, (float)s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return c;
}
"""

_ext = load_inline(name="kh_fidelity_matrix_scalar", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["scale"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return _ext.scale(A.contiguous(), float(s))
