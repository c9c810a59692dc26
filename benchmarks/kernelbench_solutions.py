"""Writes honest CUDA solutions for KernelBench level 1's elementwise, dimension-reduction and softmax
problems, for benchmarks/kernelbench_batch.py.

    python benchmarks/kernelbench_solutions.py --out DIR

DIR/level1/<N>_<Name>.py, a mirror of KernelBench's tree (import_generations reads the problem from the path).
Each is one self-contained file, as a solution must be, building its kernels through
torch.utils.cpp_extension.load_inline.

Elementwise (ELEMENTWISE, thirteen problems): a float4 grid-stride kernel (and a tail kernel for what is left of
a multiple of four), computing the problem's function in float32 with the accurate CUDA math functions (expf,
erff, tanhf, expm1f, log1pf), so that the precision rule's comparison against float64 passes. Every problem but
one takes one contiguous float32 tensor of 4096 x 393216 (6 GiB); 88_MinGPTNewGelu takes 8192 x 8192 (256 MiB).
ELU and LeakyReLU also take their constructor's parameter, as the reference Model does.

Reductions over a dimension (REDUCTIONS, six problems: 47-49 and 51-53, sum, mean, max, argmax, argmin, min):
the constructor takes `dim`, as the reference's does; the extension views the input, made contiguous, as
(outer, R, inner) around `dim` (any dim, negative too) and returns the reference's shape (keepdim for 47
alone) and dtype (int64 for argmax and argmin). A block covers 32 adjacent inner positions of one outer index,
so that a warp reads 32 adjacent floats, and each of its 8 warps folds one contiguous eighth of R in index
order; one thread then folds the eight partial results in order. Sum and mean accumulate in float64 and round
once to float32 (a float32 running sum over R = 4096 would be far less accurate than torch's). Max and min
propagate NaN, as torch does; argmax and argmin keep the first index of the extreme value and count NaN as the
extreme (the first NaN's index), as torch does. Every problem takes torch.rand(128, 4096, 4095) (8 GiB) and
reduces dim 1; reducing the last dim (inner == 1) is correct but leaves 31 of each warp's 32 threads idle.

Softmax and log-softmax (SOFTMAXES, 23 and 24): over the last dimension of a contiguous float32 tensor (dim 1
of the problems' 4096 x 393216, 6 GiB; another dim is refused; 24's constructor takes `dim`, as the
reference's does). One block of 512 threads per row and two passes over it: the first an online max and sum
of exp(x - max), each thread's sum in float64 (rescaled in float64 when its max grows), folded over the block
in a fixed order; the second writes expf(x - M) / S (by a reciprocal held in two floats) or x - (M + log S)
(in float64), float4 loads and stores where x's and y's rows are 16-byte aligned alike. A NaN makes its row
NaN, as in torch.

The kernels are written here once, from a template and a table for each family, rather than twenty copies.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NamedTuple

# KernelBench level-1 file -> (the CUDA expression of one float `v`, its parameter: (name, default) or None).
# The parameter reaches the kernel as the float `p`.
ELEMENTWISE: dict[str, tuple[str, tuple[str, float] | None]] = {
    "19_ReLU": ("fmaxf(v, 0.f)", None),
    "20_LeakyReLU": ("v > 0.f ? v : v * p", ("negative_slope", 0.01)),
    "21_Sigmoid": ("1.f / (1.f + expf(-v))", None),
    "22_Tanh": ("tanhf(v)", None),
    "25_Swish": ("v / (1.f + expf(-v))", None),
    "26_GELU_": ("0.5f * v * (1.f + erff(v * 0.70710678118654752f))", None),
    # SELU's constants as torch defines them (scale, alpha).
    "27_SELU_": ("v > 0.f ? 1.05070098735548049f * v : 1.05070098735548049f * 1.67326324235437728f * expm1f(v)",
                 None),
    "28_HardSigmoid": ("fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f", None),
    # torch's softplus with beta 1 and threshold 20: linear above the threshold.
    "29_Softplus": ("v > 20.f ? v : log1pf(expf(v))", None),
    "30_Softsign": ("v / (1.f + fabsf(v))", None),
    "31_ELU": ("v > 0.f ? v : p * expm1f(v)", ("alpha", 1.0)),
    "32_HardTanh": ("fminf(fmaxf(v, -1.f), 1.f)", None),
    # minGPT's tanh form of GELU, as the problem writes it (sqrt(2 / pi) rounded to float); 8192 x 8192, 256 MiB.
    "88_MinGPTNewGelu": ("0.5f * v * (1.f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)))", None),
}

TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/{name}.py (benchmarks/kernelbench_solutions.py wrote it):
y = {expression}, elementwise, float4 loads and stores."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor apply(torch::Tensor x, double p);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float f(float v, float p) {{ return {expression}; }}

__global__ void apply_vec(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4, float p) {{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {{
        const float4 v = x[i];
        y[i] = make_float4(f(v.x, p), f(v.y, p), f(v.z, p), f(v.w, p));
    }}
}}

__global__ void apply_tail(const float* __restrict__ x, float* __restrict__ y, int64_t start, int64_t n, float p) {{
    const int64_t i = start + threadIdx.x;
    if (i < n) y[i] = f(x[i], p);
}}

torch::Tensor apply(torch::Tensor x, double p) {{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "expects a contiguous float32 CUDA tensor");
    auto y = torch::empty_like(x);
    const int64_t n = x.numel(), n4 = n / 4;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (n4 > 0) {{
        const int64_t blocks = std::min<int64_t>((n4 + 255) / 256, 132 * 32);
        apply_vec<<<blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                              reinterpret_cast<float4*>(y.data_ptr<float>()), n4, (float)p);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }}
    if (n % 4) {{
        apply_tail<<<1, 4, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n, (float)p);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }}
    return y;
}}
"""

_ext = load_inline(name="kh_kb_l1_{number}", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["apply"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self{signature}):
        super().__init__()
        self.p = {parameter}

    def forward(self, x):
        return _ext.apply(x.contiguous(), self.p)
'''


class Reduction(NamedTuple):
    """The CUDA pieces of one kind of reduction; REDUCTION_TEMPLATE shows where each goes."""

    acc: str  # the fields of struct Acc, the fold of a run of the reduced dimension
    make: str  # the body of make(): the Acc of one element, the float `v` at index `r`
    fold: str  # the body of fold(): folds `b`, which covers indices after those of `a`, into `a`
    result: str  # the output element, from the final Acc `a` (`R`: the reduced length)
    out_type: str  # the output's CUDA type
    out_dtype: str  # and its torch dtype
    empty: str | None  # the output element of an empty reduction (R == 0); None: an error, as in torch
    note: str  # for the solution's docstring


_SUM = ("double v;", "return Acc{(double)v};", "a.v += b.v;")
# `a` gives way to a strictly greater (smaller) value or to the first NaN: an equal value keeps the earlier
# index, and a NaN `a` stays (no comparison with NaN is true, and the second clause needs `a` not NaN).
_MAX_FOLD = "if (b.v > a.v || (isnan(b.v) && !isnan(a.v))) a = b;"
_MIN_FOLD = "if (b.v < a.v || (isnan(b.v) && !isnan(a.v))) a = b;"
_SUM_NOTE = "Summed in float64, in that order, and rounded once to float32."
_MEAN_NOTE = "Summed in float64, in that order, divided by R in float64, and rounded once to float32."
_MAX_NOTE = "A NaN propagates, as in torch."
_ARG_NOTE = "Ties keep the first index; a NaN counts as the extreme (the first NaN's index). Both as torch."
_F32, _I64 = ("float", "torch::kFloat32"), ("int64_t", "torch::kInt64")
REDUCTION_KINDS: dict[str, Reduction] = {
    "sum": Reduction(*_SUM, "(float)a.v", *_F32, "0.f", _SUM_NOTE),
    "mean": Reduction(*_SUM, "(float)(a.v / (double)R)", *_F32, "NAN", _MEAN_NOTE),  # torch: 0 / 0
    "max": Reduction("float v;", "return Acc{v};", _MAX_FOLD, "a.v", *_F32, None, _MAX_NOTE),
    "min": Reduction("float v;", "return Acc{v};", _MIN_FOLD, "a.v", *_F32, None, _MAX_NOTE),
    "argmax": Reduction("float v; int64_t i;", "return Acc{v, r};", _MAX_FOLD, "a.i", *_I64, None, _ARG_NOTE),
    "argmin": Reduction("float v; int64_t i;", "return Acc{v, r};", _MIN_FOLD, "a.i", *_I64, None, _ARG_NOTE),
}

# KernelBench level-1 file -> (the reference's computation, its kind in REDUCTION_KINDS, keepdim).
REDUCTIONS: dict[str, tuple[str, str, bool]] = {
    "47_Sum_reduction_over_a_dimension": ("torch.sum(x, dim=dim, keepdim=True)", "sum", True),
    "48_Mean_reduction_over_a_dimension": ("torch.mean(x, dim=dim)", "mean", False),
    "49_Max_reduction_over_a_dimension": ("torch.max(x, dim=dim)[0]", "max", False),
    "51_Argmax_over_a_dimension": ("torch.argmax(x, dim=dim)", "argmax", False),
    "52_Argmin_over_a_dimension": ("torch.argmin(x, dim=dim)", "argmin", False),
    "53_Min_reduction_over_a_dimension": ("torch.min(x, dim=dim)[0]", "min", False),
}

REDUCTION_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/{name}.py, written by
benchmarks/kernelbench_solutions.py: y = {call}, for a float32 x and any dim.

The input, made contiguous, is viewed as (outer, R, inner) around dim. A block covers 32 adjacent inner
positions of one outer index (a warp reads 32 adjacent floats); each of its 8 warps folds one contiguous
eighth of R in index order, and one thread then folds the eight partial results in order.
{note}"""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor reduce_over_dim(torch::Tensor x, int64_t dim);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <climits>
#include <vector>

constexpr int TX = 32;  // threads along inner: a warp reads 32 adjacent floats
constexpr int TY = 8;   // warps per block, each folding one contiguous slice of the reduced dimension

// The fold of a run of the reduced dimension.
struct Acc {{ {acc} }};

// The Acc of one element: the value v at index r of the reduced dimension.
__device__ __forceinline__ Acc make(float v, int64_t r) {{
    {make}
}}

// Folds b, which covers indices after those of a, into a.
__device__ __forceinline__ void fold(Acc& a, const Acc& b) {{
    {fold}
}}

// x is (outer, R, inner), contiguous; y is (outer, inner). Block b covers the outer index b / inner_blocks
// and the inner positions (b % inner_blocks) * TX + [0, TX).
__global__ void reduce_kernel(const float* __restrict__ x, {out_type}* __restrict__ y, int64_t R,
                              int64_t inner, int64_t inner_blocks) {{
    __shared__ Acc part[TY][TX];
    const int64_t o = blockIdx.x / inner_blocks;
    const int64_t i = (blockIdx.x % inner_blocks) * TX + threadIdx.x;
    const int64_t slice = (R + TY - 1) / TY;
    const int64_t begin = threadIdx.y * slice;
    const int64_t end = begin + slice < R ? begin + slice : R;
    if (i < inner && begin < end) {{
        const float* p = x + (o * R + begin) * inner + i;
        Acc a = make(*p, begin);
#pragma unroll 8
        for (int64_t r = begin + 1; r < end; ++r) {{
            p += inner;
            fold(a, make(*p, r));
        }}
        part[threadIdx.y][threadIdx.x] = a;
    }}
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {{
        if (R == 0) {{
            y[o * inner + i] = {empty};
            return;
        }}
        // With R < TY * slice the last slices are empty: they wrote no partial result.
        Acc a = part[0][threadIdx.x];
        for (int s = 1; s < TY && s * slice < R; ++s) fold(a, part[s][threadIdx.x]);
        y[o * inner + i] = {result};
    }}
}}

torch::Tensor reduce_over_dim(torch::Tensor x, int64_t dim) {{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "expects a float32 CUDA tensor");
    const int64_t nd = x.dim();
    TORCH_CHECK(nd > 0, "expects a tensor of at least one dimension");
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "dim out of range for a tensor of ", nd, " dimensions");
    x = x.contiguous();  // x itself when it is already contiguous, as the problem's input is
    const int64_t R = x.size(dim);
    TORCH_CHECK(R > 0 || {empty_ok}, "{kind} of an empty dimension has no result (as in torch)");
    int64_t outer = 1, inner = 1;
    std::vector<int64_t> shape;  // the output's: x's, dim dropped or (keepdim) kept as 1
    for (int64_t d = 0; d < nd; ++d) {{
        if (d < dim) outer *= x.size(d);
        if (d > dim) inner *= x.size(d);
        if (d != dim) shape.push_back(x.size(d));
        else if ({keepdim}) shape.push_back(1);
    }}
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty(shape, x.options().dtype({out_dtype}));
    const int64_t inner_blocks = (inner + TX - 1) / TX, blocks = outer * inner_blocks;
    if (blocks == 0) return y;
    TORCH_CHECK(blocks <= INT_MAX, "too large a tensor: ", blocks, " blocks");
    reduce_kernel<<<(unsigned)blocks, dim3(TX, TY), 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<{out_type}>(), R, inner, inner_blocks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}}
"""

_ext = load_inline(name="kh_kb_l1_{number}", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["reduce_over_dim"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = int(dim)

    def forward(self, x):
        return _ext.reduce_over_dim(x, self.dim)
'''


# KernelBench level-1 file -> (the reference's computation, log-softmax rather than softmax, whether the
# constructor takes `dim` as the reference's does; 23's forward fixes dim 1).
SOFTMAXES: dict[str, tuple[str, bool, bool]] = {
    "23_Softmax": ("torch.softmax(x, dim=1)", False, False),
    "24_LogSoftmax": ("torch.log_softmax(x, dim=dim)", True, True),
}

SOFTMAX_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/{name}.py, written by
benchmarks/kernelbench_solutions.py: y = {call}, for a contiguous float32 x,
over its last dimension (dim 1 of the problem's 2-D input; another dim is refused).

One block of 512 threads per row, two passes over it. The first keeps, in each thread, a running max m of its
values and the sum s of exp(x - m) in float64, rescaled by exp(m_old - m_new) (float64) when m grows; a
float4's four expf values are added in float32, then to s. The block folds the threads' (m, s) into the
row's max M and sum S, in a fixed order. expf is CUDA's accurate one (no fast math). The second pass writes
{write}.
A NaN makes its whole row NaN, as in torch's CUDA kernel."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor softmax_over_dim(torch::Tensor x, int64_t dim);"

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <climits>
#include <cstdint>
#include <string>

constexpr bool LOG = {log};  // log-softmax rather than softmax
constexpr int THREADS = 512;  // a block's, one row's
constexpr int WARPS = THREADS / 32;
constexpr int UNROLL = 4;     // float4 loads in flight per thread

// exp(from - to) in float64, to being the larger max; 1 where they are equal (both -inf too).
__device__ __forceinline__ double rescale(float from, float to) {{
    return from == to ? 1.0 : exp((double)from - (double)to);
}}

// A running (m, s): m, the max of the values folded so far (-inf before any, never NaN); s, the sum of their
// exp(x - m), or while m is -inf (every value so far -inf or NaN) of their exp(x): 0, or NaN.
__device__ __forceinline__ float shift(float m) {{ return m == -INFINITY ? 0.f : m; }}

__device__ __forceinline__ void fold4(float& m, double& s, const float4 v) {{
    const float top = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));  // a NaN is skipped here, and reaches s below
    if (top > m) {{
        s *= rescale(m, top);
        m = top;
    }}
    const float c = shift(m);
    s += (double)((expf(v.x - c) + expf(v.y - c)) + (expf(v.z - c) + expf(v.w - c)));
}}

__device__ __forceinline__ void fold1(float& m, double& s, const float v) {{
    if (v > m) {{
        s *= rescale(m, v);
        m = v;
    }}
    s += (double)expf(v - shift(m));
}}

// Folds the running (mo, so) into (m, s); the same result in either order.
__device__ __forceinline__ void combine(float& m, double& s, const float mo, const double so) {{
    const float top = fmaxf(m, mo);
    s = s * rescale(m, top) + so * rescale(mo, top);
    m = top;
}}

// The output element of x = v, from the row's max M and sum S (S = 1 / (hi + lo), lse = M + log(S)).
struct Out {{
    float M, hi, lo;
    double lse;
    __device__ __forceinline__ float operator()(const float v) const {{
        if (LOG) return (float)((double)v - lse);
        const float e = expf(v - M);
        return fmaf(e, hi, e * lo);  // e / S, rounded once (nearly): hi + lo holds 1 / S to 48 bits
    }}
    __device__ __forceinline__ float4 operator()(const float4 v) const {{
        return make_float4((*this)(v.x), (*this)(v.y), (*this)(v.z), (*this)(v.w));
    }}
}};

// x and y are (rows, R), contiguous; block b does row b. The row is split into scalars [0, head), float4s
// from head to tail, and scalars [tail, R); into scalars alone where x's and y's rows are not 16-byte
// aligned alike.
__global__ void __launch_bounds__(THREADS, 2) softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                                            int64_t R) {{
    __shared__ float part_m[WARPS];
    __shared__ double part_s[WARPS];
    const float* xr = x + (int64_t)blockIdx.x * R;
    float* yr = y + (int64_t)blockIdx.x * R;
    const uintptr_t ax = reinterpret_cast<uintptr_t>(xr), ay = reinterpret_cast<uintptr_t>(yr);
    int64_t head = R, n4 = 0;
    if (((ax ^ ay) & 15) == 0) {{
        head = (int64_t)(((16 - (ax & 15)) & 15) / 4);
        if (head > R) head = R;
        n4 = (R - head) / 4;
    }}
    const int64_t tail = head + 4 * n4;
    const float4* x4 = reinterpret_cast<const float4*>(xr + head);
    float4* y4 = reinterpret_cast<float4*>(yr + head);
    const int t = threadIdx.x;

    // Pass 1: this thread's (m, s) over float4s t, t + THREADS, ..., then its scalars.
    float m = -INFINITY;
    double s = 0.0;
    int64_t i = t;
    for (; i + (UNROLL - 1) * THREADS < n4; i += UNROLL * THREADS) {{
        float4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) v[k] = x4[i + k * THREADS];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) fold4(m, s, v[k]);
    }}
    for (; i < n4; i += THREADS) fold4(m, s, x4[i]);
    for (int64_t j = t; j < head; j += THREADS) fold1(m, s, xr[j]);
    for (int64_t j = tail + t; j < R; j += THREADS) fold1(m, s, xr[j]);

    // The row's (M, S): a butterfly within each warp (every lane ends with its warp's), then the warps' in
    // order, by every thread.
    for (int off = 16; off > 0; off >>= 1)
        combine(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if ((t & 31) == 0) {{
        part_m[t >> 5] = m;
        part_s[t >> 5] = s;
    }}
    __syncthreads();
    m = part_m[0];
    s = part_s[0];
    for (int w = 1; w < WARPS; ++w) combine(m, s, part_m[w], part_s[w]);

    // Pass 2. A row of -inf alone has M = -inf and S = 0: NaN throughout, as in torch.
    const double inv = 1.0 / s;
    const float hi = (float)inv;
    const Out out{{m, hi, (float)(inv - (double)hi), (double)m + log(s)}};
    i = t;
    for (; i + (UNROLL - 1) * THREADS < n4; i += UNROLL * THREADS) {{
        float4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) v[k] = x4[i + k * THREADS];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) y4[i + k * THREADS] = out(v[k]);
    }}
    for (; i < n4; i += THREADS) y4[i] = out(x4[i]);
    for (int64_t j = t; j < head; j += THREADS) yr[j] = out(xr[j]);
    for (int64_t j = tail + t; j < R; j += THREADS) yr[j] = out(xr[j]);
}}

torch::Tensor softmax_over_dim(torch::Tensor x, int64_t dim) {{
    TORCH_CHECK(x.is_cuda(), "expects a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expects a float32 tensor, got ", x.scalar_type());
    TORCH_CHECK(x.is_contiguous(), "expects a contiguous tensor");
    const int64_t nd = x.dim();
    TORCH_CHECK(nd > 0, "expects a tensor of at least one dimension");
    const int64_t d = dim < 0 ? dim + nd : dim;
    // Integers reach the messages as strings: streaming an int64_t into one crashed the process on the GPU
    // machine's torch build (2.11, a refused dim), where a string does not.
    TORCH_CHECK(d == nd - 1, "normalises over the last dimension only (", std::to_string(nd - 1),
                " or -1 for a tensor of ", std::to_string(nd), " dimensions), got dim ", std::to_string(dim));
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x);
    const int64_t R = x.size(nd - 1);
    if (x.numel() == 0) return y;
    const int64_t rows = x.numel() / R;
    TORCH_CHECK(rows <= INT_MAX, "too many rows: ", std::to_string(rows));
    softmax_rows<<<(unsigned)rows, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), R);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}}
"""

_ext = load_inline(name="kh_kb_l1_{number}", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["softmax_over_dim"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self{signature}):
        super().__init__()
        self.dim = {dim}

    def forward(self, x):
        return _ext.softmax_over_dim(x, self.dim)
'''


def source(name: str) -> str:
    expression, parameter = ELEMENTWISE[name]
    if parameter is None:
        signature, value = "", "0.0"
    else:
        signature, value = f", {parameter[0]}: float = {parameter[1]!r}", f"float({parameter[0]})"
    return TEMPLATE.format(name=name, expression=expression, number=name.split("_")[0], signature=signature,
                           parameter=value)


def reduction_source(name: str) -> str:
    call, kind, keepdim = REDUCTIONS[name]
    k = REDUCTION_KINDS[kind]
    return REDUCTION_TEMPLATE.format(
        name=name, call=call, note=k.note, acc=k.acc, make=k.make, fold=k.fold, result=k.result,
        out_type=k.out_type, out_dtype=k.out_dtype, kind=kind, number=name.split("_")[0],
        # An empty reduction: the kernel writes `empty` where torch has a result; elsewhere the host refuses
        # it, as torch does, and the kernel's "0" is never reached.
        empty=k.empty or "0", empty_ok="true" if k.empty else "false",
        keepdim="true" if keepdim else "false")


def softmax_source(name: str) -> str:
    call, log, takes_dim = SOFTMAXES[name]
    write = ("x - (M + log(S)) in float64, rounded once to float32" if log else
             "expf(x - M) / S, as a product by 1 / S held in two floats (hi + lo), rounded about once")
    return SOFTMAX_TEMPLATE.format(
        name=name, call=call, write=write, log="true" if log else "false", number=name.split("_")[0],
        signature=", dim: int = 1" if takes_dim else "", dim="int(dim)" if takes_dim else "1")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    folder = args.out / "level1"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ELEMENTWISE:
        (folder / f"{name}.py").write_text(source(name))
    for name in REDUCTIONS:
        (folder / f"{name}.py").write_text(reduction_source(name))
    for name in SOFTMAXES:
        (folder / f"{name}.py").write_text(softmax_source(name))
    print(f"{len(ELEMENTWISE) + len(REDUCTIONS) + len(SOFTMAXES)} solutions in {folder}")


if __name__ == "__main__":
    main()
