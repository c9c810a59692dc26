"""LSTM over a sequence: one GEMM for every step's input projection, then per step a GEMM on h with the gate maths fused into its store."""

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

// C[i, j] = epi(sum_k A[i, k] * B[j, k], i, j) for row-major A (M x K) and B (N x K): the layout of
// x @ W^T with an nn.Linear weight W. Work is split into 64 x 64 blocks of C so that a block of A and a
// panel of B stay in cache; inside a block, 4 x 4 register tiles share each loaded value four times.
template <typename Epilogue>
static void gemm_nt(const float* A, const float* B, int64_t M, int64_t N, int64_t K, Epilogue epi) {
    constexpr int64_t BLK = 64;
    const int64_t mb = (M + BLK - 1) / BLK, nb = (N + BLK - 1) / BLK;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t jb = 0; jb < nb; ++jb) {
        for (int64_t ib = 0; ib < mb; ++ib) {
            const int64_t i_end = std::min(M, (ib + 1) * BLK), j_end = std::min(N, (jb + 1) * BLK);
            for (int64_t i0 = ib * BLK; i0 < i_end; i0 += 4) {
                for (int64_t j0 = jb * BLK; j0 < j_end; j0 += 4) {
                    if (i0 + 4 <= i_end && j0 + 4 <= j_end) {
                        const float* a0 = A + i0 * K; const float* a1 = a0 + K;
                        const float* a2 = a1 + K;     const float* a3 = a2 + K;
                        const float* b0 = B + j0 * K; const float* b1 = b0 + K;
                        const float* b2 = b1 + K;     const float* b3 = b2 + K;
                        float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
                        float c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
                        #pragma omp simd reduction(+:c00,c01,c02,c03,c10,c11,c12,c13,c20,c21,c22,c23,c30,c31,c32,c33)
                        for (int64_t k = 0; k < K; ++k) {
                            const float x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
                            const float y0 = b0[k], y1 = b1[k], y2 = b2[k], y3 = b3[k];
                            c00 += x0 * y0; c01 += x0 * y1; c02 += x0 * y2; c03 += x0 * y3;
                            c10 += x1 * y0; c11 += x1 * y1; c12 += x1 * y2; c13 += x1 * y3;
                            c20 += x2 * y0; c21 += x2 * y1; c22 += x2 * y2; c23 += x2 * y3;
                            c30 += x3 * y0; c31 += x3 * y1; c32 += x3 * y2; c33 += x3 * y3;
                        }
                        epi(c00, i0, j0); epi(c01, i0, j0 + 1); epi(c02, i0, j0 + 2); epi(c03, i0, j0 + 3);
                        epi(c10, i0 + 1, j0); epi(c11, i0 + 1, j0 + 1); epi(c12, i0 + 1, j0 + 2); epi(c13, i0 + 1, j0 + 3);
                        epi(c20, i0 + 2, j0); epi(c21, i0 + 2, j0 + 1); epi(c22, i0 + 2, j0 + 2); epi(c23, i0 + 2, j0 + 3);
                        epi(c30, i0 + 3, j0); epi(c31, i0 + 3, j0 + 1); epi(c32, i0 + 3, j0 + 2); epi(c33, i0 + 3, j0 + 3);
                    } else {
                        // Edge of the matrix: plain dot products for what is left of the tile.
                        for (int64_t i = i0; i < std::min(i0 + 4, i_end); ++i) {
                            for (int64_t j = j0; j < std::min(j0 + 4, j_end); ++j) {
                                const float* a = A + i * K; const float* b = B + j * K;
                                float acc = 0;
                                #pragma omp simd reduction(+:acc)
                                for (int64_t k = 0; k < K; ++k) acc += a[k] * b[k];
                                epi(acc, i, j);
                            }
                        }
                    }
                }
            }
        }
    }
}

static inline float sigmoidf(float v) { return 1.0f / (1.0f + std::exp(-v)); }

torch::Tensor lstm_sequence(torch::Tensor x, torch::Tensor w_ih, torch::Tensor w_hh,
                            torch::Tensor b_ih, torch::Tensor b_hh) {
    check_f32(x, "x"); check_f32(w_ih, "weight_ih"); check_f32(w_hh, "weight_hh");
    check_f32(b_ih, "bias_ih"); check_f32(b_hh, "bias_hh");
    const int64_t T = x.size(0), B = x.size(1), I = x.size(2), H = w_hh.size(1);
    TORCH_CHECK(w_ih.size(0) == 4 * H && w_ih.size(1) == I && w_hh.size(0) == 4 * H, "LSTM weights do not match x");
    // Input projections of all steps at once: xg[t*B + b, g] = x[t, b] . w_ih[g] + b_ih[g] + b_hh[g].
    auto xg = torch::empty({T * B, 4 * H}, x.options());
    float* xgp = xg.data_ptr<float>();
    const float* bi = b_ih.data_ptr<float>();
    const float* bh = b_hh.data_ptr<float>();
    const int64_t G = 4 * H;
    gemm_nt(x.data_ptr<float>(), w_ih.data_ptr<float>(), T * B, G, I,
            [=](float v, int64_t i, int64_t j) { xgp[i * G + j] = v + bi[j] + bh[j]; });
    auto out = torch::empty({T, B, H}, x.options());
    auto gates = torch::empty({B, G}, x.options());
    auto c = torch::empty({B, H}, x.options());
    float* op = out.data_ptr<float>();
    float* gp = gates.data_ptr<float>();
    float* cp = c.data_ptr<float>();
    for (int64_t t = 0; t < T; ++t) {
        const float* xt = xgp + t * B * G;
        if (t == 0) {
            // h = 0: the gates are the input projections alone.
            #pragma omp parallel for schedule(static)
            for (int64_t i = 0; i < B * G; ++i) gp[i] = xt[i];
        } else {
            const float* hprev = op + (t - 1) * B * H;
            gemm_nt(hprev, w_hh.data_ptr<float>(), B, G, H,
                    [=](float v, int64_t i, int64_t j) { gp[i * G + j] = v + xt[i * G + j]; });
        }
        float* ht = op + t * B * H;
        #pragma omp parallel for schedule(static)
        for (int64_t idx = 0; idx < B * H; ++idx) {
            const int64_t b = idx / H, k = idx % H;
            const float* g = gp + b * G;
            const float ig = sigmoidf(g[k]), fg = sigmoidf(g[H + k]);
            const float cg = std::tanh(g[2 * H + k]), og = sigmoidf(g[3 * H + k]);
            const float cprev = t == 0 ? 0.0f : cp[idx];
            const float cn = fg * cprev + ig * cg;
            cp[idx] = cn;
            ht[idx] = og * std::tanh(cn);
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="kh_lstm_sequence_cpu",
    cpp_sources=CPP_SOURCE,
    functions=['lstm_sequence'],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x):
        return _ext.lstm_sequence(x.contiguous(), self.cell.weight_ih, self.cell.weight_hh, self.cell.bias_ih,
                                  self.cell.bias_hh)
