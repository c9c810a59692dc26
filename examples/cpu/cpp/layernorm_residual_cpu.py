"""Residual add fused into LayerNorm: the sum is kept in a per-row buffer, never written out."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>
#include <algorithm>
static void check_f32(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.device().is_cpu(), what, " must be on the CPU");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, what, " must be float32");
    TORCH_CHECK(t.is_contiguous(), what, " must be contiguous");
}

// Two passes over one row (mean, then variance of the centred values) keep float32 accurate.
static inline void layernorm_row(const float* x, const float* w, const float* b, float* y, int64_t n, float eps) {
    float sum = 0;
    #pragma omp simd reduction(+:sum)
    for (int64_t j = 0; j < n; ++j) sum += x[j];
    const float mean = sum / n;
    float sq = 0;
    #pragma omp simd reduction(+:sq)
    for (int64_t j = 0; j < n; ++j) { const float d = x[j] - mean; sq += d * d; }
    const float rstd = 1.0f / std::sqrt(sq / n + eps);
    #pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * w[j] + b[j];
}

#include <vector>
torch::Tensor add_layernorm(torch::Tensor x, torch::Tensor r, torch::Tensor w, torch::Tensor b, double eps) {
    check_f32(x, "x"); check_f32(r, "residual"); check_f32(w, "weight"); check_f32(b, "bias");
    TORCH_CHECK(x.sizes() == r.sizes(), "x and residual must have the same shape");
    const int64_t n = x.size(-1), rows = x.numel() / n;
    auto y = torch::empty_like(x);
    const float* xp = x.data_ptr<float>();
    const float* rp = r.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    #pragma omp parallel
    {
        std::vector<float> sum(n);  // one row of x + residual, per thread
        #pragma omp for schedule(static)
        for (int64_t row = 0; row < rows; ++row) {
            #pragma omp simd
            for (int64_t j = 0; j < n; ++j) sum[j] = xp[row * n + j] + rp[row * n + j];
            layernorm_row(sum.data(), w.data_ptr<float>(), b.data_ptr<float>(), yp + row * n, n, (float)eps);
        }
    }
    return y;
}
"""

_ext = load_inline(
    name="kh_layernorm_residual_cpu",
    cpp_sources=CPP_SOURCE,
    functions=['add_layernorm'],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, x, residual):
        return _ext.add_layernorm(x.contiguous(), residual.contiguous(), self.norm.weight, self.norm.bias,
                                  self.norm.eps)
