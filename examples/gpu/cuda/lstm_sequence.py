"""LSTM over a sequence: one GEMM for all input projections, then per step a GEMM on h and a gate kernel."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = """
torch::Tensor lstm_sequence(torch::Tensor x, torch::Tensor w_ih, torch::Tensor w_hh, torch::Tensor b_ih, torch::Tensor b_hh);
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

// Single-precision GEMM, C[m, n] = epi(sum_k A[m, k] * B'[k, n], m, n), A row-major M x K. B' is B (K x N,
// row-major) or, with B_T, the transpose of B (N x K, row-major: an nn.Linear weight). A 128 x 128 tile of C
// per block of 256 threads, 8 x 8 outputs per thread in registers, k in steps of 8 through shared memory.
// A thread owns rows {4*ty + i, 64 + 4*ty + i} and columns {4*tx + j, 64 + 4*tx + j}, so its shared-memory
// reads are float4s that a quarter-warp takes without bank conflicts. Full fp32 FMAs: no TF32.
template <bool B_T, typename Epi>
__global__ void __launch_bounds__(256) sgemm_128(const float* __restrict__ A, const float* __restrict__ B,
                                                 int M, int N, int K, Epi epi) {
    __shared__ __align__(16) float As[8][128];
    __shared__ __align__(16) float Bs[8][128];
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    const int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
    const int l_row = t / 2, l_col = (t % 2) * 4;    // loader for a 128 x 8 slab (A, or B when transposed)
    const int b_row = t / 32, b_col = (t % 32) * 4;  // loader for an 8 x 128 slab (B row-major)
    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += 8) {
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int m = m0 + l_row, k = k0 + l_col + i;
            As[l_col + i][l_row] = (m < M && k < K) ? A[(size_t)m * K + k] : 0.0f;
        }
        if (B_T) {
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int n = n0 + l_row, k = k0 + l_col + i;
                Bs[l_col + i][l_row] = (n < N && k < K) ? B[(size_t)n * K + k] : 0.0f;
            }
        } else {
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int k = k0 + b_row, n = n0 + b_col + i;
                Bs[b_row][b_col + i] = (k < K && n < N) ? B[(size_t)k * N + n] : 0.0f;
            }
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
            const float4 a_lo = *reinterpret_cast<const float4*>(&As[kk][4 * ty]);
            const float4 a_hi = *reinterpret_cast<const float4*>(&As[kk][64 + 4 * ty]);
            const float4 b_lo = *reinterpret_cast<const float4*>(&Bs[kk][4 * tx]);
            const float4 b_hi = *reinterpret_cast<const float4*>(&Bs[kk][64 + 4 * tx]);
            const float a[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
            const float b[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + (i - 4));
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int n = n0 + (j < 4 ? 4 * tx + j : 64 + 4 * tx + (j - 4));
            if (m < M && n < N) epi(acc[i][j], m, n);
        }
    }
}

template <bool B_T, typename Epi>
static void launch_sgemm(const float* A, const float* B, int M, int N, int K, Epi epi) {
    const dim3 grid((N + 127) / 128, (M + 127) / 128);
    sgemm_128<B_T, Epi><<<grid, 256, 0, at::cuda::getCurrentCUDAStream()>>>(A, B, M, N, K, epi);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

struct InputProjection {  // xg = x W_ih^T + b_ih + b_hh
    float* y; const float* b_ih; const float* b_hh; int n;
    __device__ void operator()(float v, int i, int j) const { y[(size_t)i * n + j] = v + b_ih[j] + b_hh[j]; }
};
struct AddProjection {  // gates = h W_hh^T + xg[t]
    float* y; const float* xg; int n;
    __device__ void operator()(float v, int i, int j) const {
        const size_t k = (size_t)i * n + j;
        y[k] = v + xg[k];
    }
};

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

// Gate order input, forget, cell, output, as nn.LSTMCell; c is updated in place, h written to out[t].
__global__ void lstm_gates_kernel(const float* __restrict__ gates, float* __restrict__ c, float* __restrict__ h,
                                  int B, int H, bool first) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * H) return;
    const int b = idx / H, k = idx % H;
    const float* g = gates + (size_t)b * 4 * H;
    const float ig = sigmoid(g[k]), fg = sigmoid(g[H + k]), cg = tanhf(g[2 * H + k]), og = sigmoid(g[3 * H + k]);
    const float cn = fg * (first ? 0.0f : c[idx]) + ig * cg;
    c[idx] = cn;
    h[idx] = og * tanhf(cn);
}

torch::Tensor lstm_sequence(torch::Tensor x, torch::Tensor w_ih, torch::Tensor w_hh, torch::Tensor b_ih,
                            torch::Tensor b_hh) {
    check_cuda(x, "x", torch::kFloat32); check_cuda(w_ih, "weight_ih", torch::kFloat32);
    check_cuda(w_hh, "weight_hh", torch::kFloat32); check_cuda(b_ih, "bias_ih", torch::kFloat32);
    check_cuda(b_hh, "bias_hh", torch::kFloat32);
    TORCH_CHECK(x.dim() == 3, "x must be (seq, batch, input)");
    const int T = x.size(0), B = x.size(1), I = x.size(2), H = w_hh.size(1), G = 4 * H;
    TORCH_CHECK(w_ih.size(0) == G && w_ih.size(1) == I && w_hh.size(0) == G, "LSTM weights do not match x");
    auto xg = torch::empty({T * B, G}, x.options());
    launch_sgemm<true>(x.data_ptr<float>(), w_ih.data_ptr<float>(), T * B, G, I,
                       InputProjection{xg.data_ptr<float>(), b_ih.data_ptr<float>(), b_hh.data_ptr<float>(), G});
    auto out = torch::empty({T, B, H}, x.options());
    auto gates = torch::empty({B, G}, x.options());
    auto c = torch::empty({B, H}, x.options());
    auto stream = at::cuda::getCurrentCUDAStream();
    for (int t = 0; t < T; ++t) {
        const float* xt = xg.data_ptr<float>() + (size_t)t * B * G;
        const float* step_gates = xt;  // h = 0 at the first step: the gates are the input projection alone
        if (t > 0) {
            launch_sgemm<true>(out.data_ptr<float>() + (size_t)(t - 1) * B * H, w_hh.data_ptr<float>(), B, G, H,
                               AddProjection{gates.data_ptr<float>(), xt, G});
            step_gates = gates.data_ptr<float>();
        }
        lstm_gates_kernel<<<(B * H + 255) / 256, 256, 0, stream>>>(step_gates, c.data_ptr<float>(),
                                                                  out.data_ptr<float>() + (size_t)t * B * H, B, H, t == 0);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}
"""

_ext = load_inline(
    name="kh_lstm_sequence_cuda",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=['lstm_sequence'],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x):
        return _ext.lstm_sequence(x.contiguous(), self.cell.weight_ih, self.cell.weight_hh, self.cell.bias_ih,
                                  self.cell.bias_hh)
