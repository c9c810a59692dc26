"""Scale, causal mask and softmax in one pass per row; masked entries are written as exact zeros."""

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

torch::Tensor scale_mask_softmax(torch::Tensor s, double scale) {
    check_f32(s, "scores");
    TORCH_CHECK(s.dim() >= 2 && s.size(-1) == s.size(-2), "scores must end in a square (seq x seq) matrix");
    const int64_t T = s.size(-1), rows = s.numel() / T;
    auto y = torch::empty_like(s);
    const float* in = s.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const float sc = (float)scale;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % T;  // query position: keys 0..i are visible
        const float* xr = in + r * T;
        float* yr = out + r * T;
        float m = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) m = std::max(m, xr[j] * sc);
        float sum = 0;
        for (int64_t j = 0; j <= i; ++j) { const float e = std::exp(xr[j] * sc - m); yr[j] = e; sum += e; }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j <= i; ++j) yr[j] *= inv;
        for (int64_t j = i + 1; j < T; ++j) yr[j] = 0.0f;
    }
    return y;
}
"""

_ext = load_inline(
    name="kh_scale_mask_softmax_cpu",
    cpp_sources=CPP_SOURCE,
    functions=['scale_mask_softmax'],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, seq, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        return _ext.scale_mask_softmax(scores.contiguous(), self.scale)
