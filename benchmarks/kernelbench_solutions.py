"""Writes honest CUDA solutions for KernelBench level 1's elementwise, scalar-multiplication,
dimension-reduction, softmax, normalization, pooling, loss and scan problems (47 of them: every level-1 problem
but the matrix multiplications, the convolutions and attention), and for eleven of level 2's "Linear, then
elementwise ops" problems, for benchmarks/kernelbench_batch.py.

    python benchmarks/kernelbench_solutions.py --out DIR

DIR/level1/<N>_<Name>.py and DIR/level2/<N>_<Name>.py, a mirror of KernelBench's tree (import_generations reads the problem from the path).
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

Scalar multiplication (SCALINGS, 5_Matrix_scalar_multiplication, forward(A, s) with a Python float s, A of
65536 x 16384, 4 GiB): each element times s in float64, rounded once; a grid-stride kernel, float4 where A
and C are 16-byte aligned, then the last n % 4 elements.

Row norms (ROW_NORMS, 38_L1Norm_ and 39_L2Norm_, x / mean(|x|) and x / norm(x) over dim 1 of a 32768 x 65535
float32 x, 8 GiB; only two-dimensional inputs): one block of 512 threads per row, scalar loads (rows of 65535
floats are not 16-byte aligned), the row's sum of |x| or x * x in float64 folded in a fixed order, the factor
(R / sum or 1 / sqrt(sum)) in float64, and x times it rounded once.

Frobenius norm (FROBENIUS_NORMS, 37_FrobeniusNorm_, x / torch.norm(x, p='fro') over 112 x 64 x 512 x 512, 7 GiB):
the sum of squares in float64 over a fixed grid of 2048 blocks, each block's sum to its own slot of a buffer, a
one-block kernel folding those in a fixed order into 1 / sqrt(sum), then x times it; no atomics, no host sync.

RMS norm (RMS_NORMS, 36_RMSNorm_, x / sqrt(mean(x ** 2, dim=1) + eps) over 112 x 64 x 512 x 512; the
constructor takes num_features and eps, as the reference's does): one thread per (batch, inner) position,
adjacent threads at adjacent inner positions, the 64 features summed in float64, then written.

Statistics norms (STAT_NORMS, 33_BatchNorm, 34_InstanceNorm, 35_GroupNorm_, 40_LayerNorm; 4 GiB, 7 GiB, 7 GiB and
256 MiB in): the reference's module, kept under its attribute name so that its weight, bias and running
statistics load into ours. x is viewed as rows (N * C rows of the spatial size, or N rows of the normalized size),
each in one group (a channel over the batch, a plane, C / G channels of a sample, a sample); the sums of x and
x * x over chunks of 16384 elements of a row in float64, a block per group folding its chunks in a fixed order
into the mean and 1 / sqrt(var + eps) (biased variance), then (x - mean) * rstd * weight + bias in float64 for each
element, rounded once. Batch norm in training mode (the reference's) updates its running statistics as torch
does, and in eval mode normalizes by them. The index arithmetic of the three kernels was checked on the
development machine (2026-12-07) by a float64 emulation against torch's four modules (differences under 3e-15).

Pooling (POOLS, 41-46: max and average over 1, 2 and 3 spatial dims; 2-16 GiB in): the reference's module, kept under
its attribute name, its settings read from it at each call (ceil_mode and returned indices refused). One thread per
output folds its window: the maximum (NaN propagates; padding never wins) or the float64 sum over the window
clipped to the input, divided by the window clipped to the padded input (count_include_pad, torch's default), by
the clipped window otherwise, or by divisor_override. The index arithmetic was checked on the development machine
(2026-12-07) by a float64 emulation against torch's six modules and two more settings (equal).

Losses (LOSSES, 94_MSELoss, 96_HuberLoss, 98_KLDivLoss, 100_HingeLoss, a 0-dim float32 result): each term in
float64 (KL's logs too), summed per block over a grid fixed by the element count, the blocks' sums folded by a
second kernel in a fixed order and divided (by the count, or by predictions.size(0) for KL's batchmean). The
hinge loss's targets (32768,) broadcast along the last dim of its predictions (32768 x 32768), as in torch.

Row losses (ROW_LOSSES, 95_CrossEntropyLoss over 32768 x 4096 logits, 99_TripletMarginLoss over three
32768 x 8192 inputs): a block per row computes the row's term in float64 (logsumexp(x) - x[target]: the row's
maximum, then the sum of exp(x - max) in float64; or max(margin + |a - p + eps| - |a - n + eps|, 0)), each to its
own slot, and one block folds them in a fixed order and divides (cross-entropy leaves out rows whose target is
-100, torch's ignore_index).

Scans (SCANS, 89_cumsum, 90_cumprod, 91_cumsum_reverse, 92_cumsum_exclusive, 93_masked_cumsum, over dim 1 of 32768 x
32768, 4 GiB; the constructor takes `dim`, and any dim but the last is refused): one block of 256 threads per
row, in tiles of 2048 loaded into shared memory, each thread's 8 contiguous elements summed in float64, a
block scan of those sums in float64, and each output the float64 running sum rounded once (reversed for 91;
the element itself left out for 92, whose reference prepends a zero column; x * mask for 93; a running product
in float64 for 90).

Level 2, "Linear, then elementwise ops" (GEMMS, eleven problems: 9, 12, 29, 40, 53, 59, 63, 70, 76, 81, 86;
DIR/level2/): the reference's nn.Linear, kept under the reference's attribute name so that its weight and bias
load into ours, computed by the float32 GEMM of the bundled example examples/gpu/cuda/gemm_gelu_scale.py (a 128 x
128 tile per block, 8 x 8 outputs a thread, fmaf over k in order, no TF32; read from that file when the solutions
are written), with the rest of the forward applied in float32 to each value as it is stored. The guards refuse
torch's own matmul inside a forward, so a solution has to bring its GEMM. The store's expressions were checked on
the development machine (2026-12-07) against the reference Model's own tail in float64, with the Linear made an
identity, over 60,000 float32 values in [-30, 30]: elementwise relative differences at most 8e-7, 1.1e-5 and
1.5e-5 for 86 and 70 at values near zero (a quotient or sum cancelling there); the GEMM has run on a GPU only as
that example, on 2026-11-30, before the precision rule. None of the eleven has run on a GPU yet.

The kernels are written here once, from a template and a table for each family, rather than twenty copies.
The first three families' templates go through str.format (C++ braces doubled); the later ones through _fill,
a plain @KEY@ substitution, so that their C++ is written as C++ has it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
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


# The families below fill their templates by plain substitution (_fill: @KEY@ -> text), not str.format, so
# that their C++ braces are written as C++ has them. Pieces shared by several templates:

_HEADERS = """#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>"""

_BLOCK_SUM = """// The sum of v over the block's THREADS threads (a power of two), in float64 and in
// a fixed order (a tree over shared memory sh[THREADS]); every thread gets it. Every thread of the block
// calls it, once.
__device__ __forceinline__ double block_sum(double v, double* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if ((int)threadIdx.x < half) sh[threadIdx.x] += sh[threadIdx.x + half];
        __syncthreads();
    }
    return sh[0];
}"""

# Whether a float32 pointer may be read as float4s.
_ALIGNED = """inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }"""

# A shape for a message (integers reach TORCH_CHECK's messages as strings: see SOFTMAX_TEMPLATE).
_SHAPE_STRING = """std::string shape_string(c10::IntArrayRef s) {
    std::string r = "(";
    for (size_t k = 0; k < s.size(); ++k) r += (k ? ", " : "") + std::to_string(s[k]);
    return r + ")";
}"""


def _fill(template: str, **values: str) -> str:
    """template with each @KEY@ replaced by values[KEY]; every placeholder must be filled."""
    for key, value in values.items():
        if f"@{key}@" not in template:
            raise KeyError(f"no @{key}@ in the template")
        template = template.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z0-9_]+@", template)
    if left:
        raise KeyError(f"unfilled placeholders: {sorted(set(left))}")
    return template


# KernelBench level-1 files of the scalar multiplication family (one problem): forward(A, s), s a float.
SCALINGS = ("5_Matrix_scalar_multiplication",)

SCALING_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py: C = A * s, for a float32 A and a Python float s.

Each element is multiplied by s in float64 and rounded once to float32 (the correctly rounded product). One
grid-stride kernel: float4 loads and stores where A's and C's data are 16-byte aligned (then the last n % 4
elements one by one), scalars otherwise. 64-bit indices throughout."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor scale(torch::Tensor a, double s);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t MAX_BLOCKS = 4096;

@ALIGNED@

__device__ __forceinline__ float mul(float v, double s) { return (float)((double)v * s); }

// Elements [0, 4 * n4) as n4 float4s, then [4 * n4, n) one by one; both loops grid-stride.
__global__ void scale_kernel(const float* __restrict__ a, float* __restrict__ c, int64_t n, int64_t n4,
                             double s) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    float4* c4 = reinterpret_cast<float4*>(c);
    for (int64_t i = first; i < n4; i += stride) {
        const float4 v = a4[i];
        c4[i] = make_float4(mul(v.x, s), mul(v.y, s), mul(v.z, s), mul(v.w, s));
    }
    for (int64_t i = 4 * n4 + first; i < n; i += stride) c[i] = mul(a[i], s);
}

torch::Tensor scale(torch::Tensor a, double s) {
    TORCH_CHECK(a.is_cuda(), "A must be a CUDA tensor");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32, "A must be float32");
    TORCH_CHECK(a.is_contiguous(), "A must be contiguous");
    const c10::cuda::CUDAGuard guard(a.device());
    auto c = torch::empty_like(a, at::MemoryFormat::Contiguous);
    const int64_t n = a.numel();
    if (n == 0) return c;
    const float* ap = a.data_ptr<float>();
    float* cp = c.data_ptr<float>();
    const int64_t n4 = aligned16(ap) && aligned16(cp) ? n / 4 : 0;
    const int64_t work = std::max<int64_t>(n4, n - 4 * n4);  // the longer loop's length
    const int64_t blocks = std::min<int64_t>((work + THREADS - 1) / THREADS, MAX_BLOCKS);
    scale_kernel<<<(unsigned)blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(ap, cp, n, n4, s);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["scale"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return _ext.scale(A.contiguous(), float(s))
'''


# KernelBench level-1 file -> (the reference's computation, the float64 term of one element `v` summed over
# the row, the float64 factor `inv` that multiplies each element, from the row's sum `sum` and its length
# `R`).
ROW_NORMS: dict[str, tuple[str, str, str]] = {
    "38_L1Norm_": ("x / torch.mean(torch.abs(x), dim=1, keepdim=True)", "fabs((double)v)", "(double)R / sum"),
    "39_L2Norm_": ("x / torch.norm(x, p=2, dim=1, keepdim=True)", "(double)v * (double)v", "1.0 / sqrt(sum)"),
}

ROW_NORM_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py:

    y = @CALL@

for a contiguous float32 x of two dimensions (dim 1 is the last; another shape is refused).

One block of 512 threads per row and two passes over it, scalar loads (the problem's rows of 65535 floats are
not 16-byte aligned). The first sums @TERM@ over the row in float64, each thread over its elements
j = t, t + 512, ..., then over the block in a fixed order (a tree in shared memory). The factor
inv = @INV@ is computed in float64, and the second pass writes x * inv, rounded once to float32.
A row of zeros gives NaN (0 / 0), as in torch."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor normalize_rows(torch::Tensor x);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 512;

@BLOCK_SUM@

// The term of one element, summed over the row.
__device__ __forceinline__ double term(float v) { return @TERM@; }

// The factor that multiplies each element of a row, from the sum of its terms and its length R.
__device__ __forceinline__ double factor(double sum, int64_t R) { return @INV@; }

// x and y are (rows, R), contiguous; block b does row b.
__global__ void __launch_bounds__(THREADS) normalize_rows_kernel(const float* __restrict__ x,
                                                                 float* __restrict__ y, int64_t R) {
    __shared__ double sh[THREADS];
    const float* xr = x + (int64_t)blockIdx.x * R;
    float* yr = y + (int64_t)blockIdx.x * R;
    double s = 0.0;
#pragma unroll 4
    for (int64_t j = threadIdx.x; j < R; j += THREADS) s += term(xr[j]);
    const double inv = factor(block_sum(s, sh), R);
#pragma unroll 4
    for (int64_t j = threadIdx.x; j < R; j += THREADS) yr[j] = (float)((double)xr[j] * inv);
}

torch::Tensor normalize_rows(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() == 2, "x must have two dimensions (normalized over dim 1, the last), got ",
                std::to_string(x.dim()));
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x, at::MemoryFormat::Contiguous);
    const int64_t rows = x.size(0), R = x.size(1);
    if (rows == 0 || R == 0) return y;
    TORCH_CHECK(rows <= INT_MAX, "too many rows: ", std::to_string(rows));
    normalize_rows_kernel<<<(unsigned)rows, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), R);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["normalize_rows"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.normalize_rows(x.contiguous())
'''


# KernelBench level-1 files of the Frobenius norm family (one problem): x / torch.norm(x, p='fro').
FROBENIUS_NORMS = ("37_FrobeniusNorm_",)

FROBENIUS_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py: y = x / torch.norm(x, p='fro'), for a contiguous float32 x of any shape.

Three kernels on the stream, no synchronization with the host. The first sums x * x in float64 over a fixed
grid of 2048 blocks (grid-stride, float4 loads where x is 16-byte aligned), each block's sum folded in a fixed
order and written to its own slot of a float64 buffer. The second, one block, folds the 2048 partial sums in a
fixed order and writes inv = 1 / sqrt(sum) (float64). The third writes x * inv, rounded once to float32.
No atomics: the result is the same from run to run. A tensor of zeros gives NaN (0 / 0), as in torch."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor frobenius_normalize(torch::Tensor x);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int PARTS = 2048;           // blocks of the first kernel: fixed, so is the summation order
constexpr int64_t MAX_BLOCKS = 4096;  // of the last kernel

@ALIGNED@

@BLOCK_SUM@

// Block b writes to part[b] the sum of x * x over its elements: float4s i = first, first + stride, ... below
// n4, then the scalars from 4 * n4 likewise.
__global__ void __launch_bounds__(THREADS) sum_squares(const float* __restrict__ x, int64_t n, int64_t n4,
                                                       double* __restrict__ part) {
    __shared__ double sh[THREADS];
    const int64_t stride = (int64_t)gridDim.x * THREADS;
    const int64_t first = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    double s = 0.0;
    for (int64_t i = first; i < n4; i += stride) {
        const float4 v = x4[i];
        s += ((double)v.x * (double)v.x + (double)v.y * (double)v.y) +
             ((double)v.z * (double)v.z + (double)v.w * (double)v.w);
    }
    for (int64_t i = 4 * n4 + first; i < n; i += stride) s += (double)x[i] * (double)x[i];
    const double b = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = b;
}

// One block: *inv = 1 / sqrt(the sum of part[0, parts)), folded in a fixed order.
__global__ void __launch_bounds__(THREADS) inverse_norm(const double* __restrict__ part, int parts,
                                                        double* __restrict__ inv) {
    __shared__ double sh[THREADS];
    double s = 0.0;
    for (int i = threadIdx.x; i < parts; i += THREADS) s += part[i];
    const double total = block_sum(s, sh);
    if (threadIdx.x == 0) *inv = 1.0 / sqrt(total);
}

__device__ __forceinline__ float mul(float v, double s) { return (float)((double)v * s); }

// y = x * (*inv), float4s then scalars as in sum_squares.
__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t n4,
                             const double* __restrict__ inv) {
    const double s = *inv;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = first; i < n4; i += stride) {
        const float4 v = x4[i];
        y4[i] = make_float4(mul(v.x, s), mul(v.y, s), mul(v.z, s), mul(v.w, s));
    }
    for (int64_t i = 4 * n4 + first; i < n; i += stride) y[i] = mul(x[i], s);
}

torch::Tensor frobenius_normalize(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x, at::MemoryFormat::Contiguous);
    const int64_t n = x.numel();
    if (n == 0) return y;
    // part[0, PARTS): the blocks' sums; part[PARTS]: 1 / the norm. Every slot is written before it is read.
    auto part = torch::empty({PARTS + 1}, x.options().dtype(torch::kFloat64));
    double* pp = part.data_ptr<double>();
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t n4x = aligned16(xp) ? n / 4 : 0;
    const int64_t n4y = aligned16(xp) && aligned16(yp) ? n / 4 : 0;
    auto stream = at::cuda::getCurrentCUDAStream();
    sum_squares<<<PARTS, THREADS, 0, stream>>>(xp, n, n4x, pp);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    inverse_norm<<<1, THREADS, 0, stream>>>(pp, PARTS, pp + PARTS);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int64_t work = std::max<int64_t>(n4y, n - 4 * n4y);  // the longer loop's length
    const int64_t blocks = std::min<int64_t>((work + THREADS - 1) / THREADS, MAX_BLOCKS);
    scale_kernel<<<(unsigned)blocks, THREADS, 0, stream>>>(xp, yp, n, n4y, pp + PARTS);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["frobenius_normalize"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.frobenius_normalize(x.contiguous())
'''


# KernelBench level-1 files of the RMS norm family (one problem): x / sqrt(mean(x ** 2, dim=1) + eps).
RMS_NORMS = ("36_RMSNorm_",)

RMS_NORM_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py: y = x / sqrt(mean(x ** 2, dim=1, keepdim=True) + eps), for a contiguous
float32 x of at least two dimensions, viewed as (B, C, inner) (inner: the product of the dims after 1).

One thread per (b, i) position, adjacent threads at adjacent inner positions i (so a warp's loads coalesce),
grid-stride. It sums x * x over the C features in float64, in order, computes inv = 1 / sqrt(sum / C + eps) in
float64, and writes x * inv for each feature, rounded once to float32. Like the reference, the number of
features is x.size(1), whatever num_features says."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor rms_normalize(torch::Tensor x, double eps);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t MAX_BLOCKS = 1 << 20;

// x and y are (B, C, inner), contiguous; position p = b * inner + i.
__global__ void __launch_bounds__(THREADS) rms_normalize_kernel(const float* __restrict__ x,
                                                                float* __restrict__ y, int64_t B, int64_t C,
                                                                int64_t inner, double eps) {
    const int64_t positions = B * inner;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < positions; p += stride) {
        const int64_t b = p / inner, i = p - b * inner;
        const float* xp = x + b * C * inner + i;
        float* yp = y + b * C * inner + i;
        double s = 0.0;
#pragma unroll 8
        for (int64_t c = 0; c < C; ++c) {
            const double v = xp[c * inner];
            s += v * v;
        }
        const double inv = 1.0 / sqrt(s / (double)C + eps);
#pragma unroll 8
        for (int64_t c = 0; c < C; ++c) yp[c * inner] = (float)((double)xp[c * inner] * inv);
    }
}

torch::Tensor rms_normalize(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() >= 2, "x must have at least two dimensions (features are dim 1), got ",
                std::to_string(x.dim()));
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x, at::MemoryFormat::Contiguous);
    if (x.numel() == 0) return y;
    const int64_t B = x.size(0), C = x.size(1), inner = x.numel() / (B * C);
    const int64_t blocks = std::min<int64_t>((B * inner + THREADS - 1) / THREADS, MAX_BLOCKS);
    rms_normalize_kernel<<<(unsigned)blocks, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), B, C, inner, eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["rms_normalize"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = int(num_features)
        self.eps = float(eps)

    def forward(self, x):
        return _ext.rms_normalize(x.contiguous(), self.eps)
'''


# KernelBench level-1 files of the statistics-norm family: batch, instance, group and layer norm, which subtract a
# group's mean and divide by its standard deviation (biased variance), then apply the module's weight and bias.
# File -> (the reference's module, as built by its __init__; the norm's kind for the kernel; the constructor's
# parameters; the module's name in the reference, so that its state_dict entries load into ours).
class StatNorm(NamedTuple):
    module: str  # the reference's module, built from the constructor's parameters
    kind: str  # BATCH, INSTANCE, GROUP or LAYER (the kernel's grouping)
    init: str  # the constructor's parameters, as the reference's
    attr: str  # the reference's attribute name for the module
    note: str  # for the docstring: what a group is


STAT_NORMS: dict[str, StatNorm] = {
    "33_BatchNorm": StatNorm(
        "nn.BatchNorm2d(num_features=num_features)", "BATCH", "num_features: int", "bn",
        "In training mode (a module's default, and the reference's) a group is a channel over the batch and the\n"
        "spatial positions, and the running statistics are updated as torch does (momentum, the unbiased variance,\n"
        "num_batches_tracked); in eval mode the running statistics normalize instead."),
    "34_InstanceNorm": StatNorm(
        "nn.InstanceNorm2d(num_features=num_features)", "INSTANCE", "num_features: int", "inorm",
        "A group is one (sample, channel) plane; no weight or bias (affine=False, as the reference's), no running\n"
        "statistics."),
    "35_GroupNorm_": StatNorm(
        "nn.GroupNorm(num_groups=num_groups, num_channels=num_features)", "GROUP",
        "num_features: int, num_groups: int", "gn",
        "A group is num_features / num_groups adjacent channels of one sample."),
    "40_LayerNorm": StatNorm(
        "nn.LayerNorm(normalized_shape=normalized_shape)", "LAYER", "normalized_shape: tuple", "ln",
        "A group is one sample's trailing dims named by normalized_shape; the weight and bias are elementwise."),
}

STAT_NORM_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py:

    y = (x - mean) / sqrt(var + eps) * weight + bias    (the reference's @MODULE@)

for a contiguous float32 x of at least two dimensions, (N, C, spatial...), the statistics over each group.
@NOTE@

x is viewed as rows of the same length (N * C rows of the spatial size, or N rows of the normalized size for the
layer norm), each row in one group. Three kernels, no atomics (the same result from run to run):
1. row_chunk_sums: each block sums x and x * x over a chunk of 16384 elements of a row in float64 (float4
   loads where the rows are 16-byte aligned), folded over the block in a fixed order, to its own slot;
2. group_stats: a block per group folds its rows' chunk sums in a fixed order, and writes the mean and
   1 / sqrt(var + eps) in float64 (var = E[x * x] - mean * mean, at least 0);
3. normalize: (x - mean) * rstd * weight + bias in float64 for each element, rounded once to float32."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = ("torch::Tensor normalize(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
              "torch::Tensor running_mean, torch::Tensor running_var, torch::Tensor batches, int64_t groups, "
              "int64_t norm_dims, bool use_batch_stats, bool update_running, double momentum, double eps);")

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t CHUNK = 16384;  // elements of a row per block of row_chunk_sums (a multiple of 4)
constexpr int64_t MAX_GRID_Y = 65535;
enum Kind { BATCH, INSTANCE, GROUP, LAYER };
constexpr Kind KIND = @KIND@;

@BLOCK_SUM@

@SHAPE_STRING@

// Rows of `len` elements; row r belongs to group (r / gdiv) % gmod. The rows of group g are
// (a * gmod + g) * gdiv + j for a < rows / (gmod * gdiv) and j < gdiv, in that order.
struct Layout {
    int64_t rows, len, chunks, gdiv, gmod, channels;
};

// Block (chunk, r): the sums of x and x * x over chunk `chunk` of row r, to part[2 * (r * chunks + chunk)].
__global__ void __launch_bounds__(THREADS) row_chunk_sums(const float* __restrict__ x, Layout L, bool vec,
                                                          double* __restrict__ part) {
    __shared__ double sh_s[THREADS], sh_q[THREADS];
    for (int64_t r = blockIdx.y; r < L.rows; r += gridDim.y) {
        const int64_t begin = (int64_t)blockIdx.x * CHUNK, end = begin + CHUNK < L.len ? begin + CHUNK : L.len;
        const float* row = x + r * L.len;
        double s = 0.0, q = 0.0;
        if (vec) {
            const float4* row4 = reinterpret_cast<const float4*>(row);
            for (int64_t i = begin / 4 + threadIdx.x; i < end / 4; i += THREADS) {
                const float4 v = row4[i];
                const double a = v.x, b = v.y, c = v.z, d = v.w;
                s += (a + b) + (c + d);
                q += (a * a + b * b) + (c * c + d * d);
            }
        } else {
            for (int64_t i = begin + threadIdx.x; i < end; i += THREADS) {
                const double a = row[i];
                s += a;
                q += a * a;
            }
        }
        const double bs = block_sum(s, sh_s), bq = block_sum(q, sh_q);
        if (threadIdx.x == 0) {
            part[2 * (r * L.chunks + blockIdx.x)] = bs;
            part[2 * (r * L.chunks + blockIdx.x) + 1] = bq;
        }
        __syncthreads();  // sh_s and sh_q are written again for the next row
    }
}

// Block g: group g's mean and 1 / sqrt(var + eps) to stats[2 * g] and stats[2 * g + 1], from its rows' chunk
// sums. Where running statistics are to be updated (batch norm in training mode), thread 0 updates channel g's
// as torch does: running = (1 - f) * running + f * batch, the variance unbiased, f the momentum or, where
// momentum is None (momentum < 0 here), 1 / num_batches_tracked after its increment (count_batch, launched
// after this kernel, increments it: every block reads the same count here).
__global__ void __launch_bounds__(THREADS) group_stats(const double* __restrict__ part, Layout L, double eps,
                                                       double* __restrict__ stats, float* running_mean,
                                                       float* running_var, int64_t* batches, double momentum) {
    __shared__ double sh_s[THREADS], sh_q[THREADS];
    const int64_t g = blockIdx.x;
    const int64_t per_a = L.gdiv * L.chunks, n = (L.rows / (L.gmod * L.gdiv)) * per_a;
    double s = 0.0, q = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += THREADS) {
        const int64_t a = i / per_a, rest = i - a * per_a;
        const int64_t r = (a * L.gmod + g) * L.gdiv + rest / L.chunks;
        const int64_t p = r * L.chunks + rest % L.chunks;
        s += part[2 * p];
        q += part[2 * p + 1];
    }
    const double bs = block_sum(s, sh_s), bq = block_sum(q, sh_q);
    if (threadIdx.x == 0) {
        const double count = (double)(L.rows / L.gmod) * (double)L.len;
        const double mean = bs / count;
        double var = bq / count - mean * mean;
        if (var < 0.0) var = 0.0;  // rounding; a NaN stays NaN
        stats[2 * g] = mean;
        stats[2 * g + 1] = 1.0 / sqrt(var + eps);
        if (running_mean != nullptr) {
            const int64_t tracked = batches != nullptr ? *batches + 1 : 1;
            const double f = momentum >= 0.0 ? momentum : 1.0 / (double)tracked;
            const double unbiased = count > 1.0 ? var * count / (count - 1.0) : var;
            running_mean[g] = (float)((1.0 - f) * (double)running_mean[g] + f * mean);
            running_var[g] = (float)((1.0 - f) * (double)running_var[g] + f * unbiased);
        }
    }
}

// num_batches_tracked += 1, as torch counts a batch in training mode.
__global__ void count_batch(int64_t* batches) { *batches += 1; }

// Batch norm in eval mode: the running statistics normalize.
__global__ void stats_from_running(const float* __restrict__ running_mean, const float* __restrict__ running_var,
                                   int64_t channels, double eps, double* __restrict__ stats) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < channels) {
        stats[2 * c] = running_mean[c];
        stats[2 * c + 1] = 1.0 / sqrt((double)running_var[c] + eps);
    }
}

// Block (chunk, r): y over chunk `chunk` of row r. The weight and bias (either may be null) are per channel
// (channel r % channels) or, for the layer norm, per element of the row.
__global__ void __launch_bounds__(THREADS) normalize_rows(const float* __restrict__ x,
                                                          const double* __restrict__ stats,
                                                          const float* __restrict__ weight,
                                                          const float* __restrict__ bias, Layout L, bool vec,
                                                          float* __restrict__ y) {
    for (int64_t r = blockIdx.y; r < L.rows; r += gridDim.y) {
        const int64_t g = (r / L.gdiv) % L.gmod;
        const double mean = stats[2 * g], rstd = stats[2 * g + 1];
        double w = 1.0, b = 0.0;
        if (KIND != LAYER) {
            if (weight != nullptr) w = weight[r % L.channels];
            if (bias != nullptr) b = bias[r % L.channels];
        }
        const int64_t begin = (int64_t)blockIdx.x * CHUNK, end = begin + CHUNK < L.len ? begin + CHUNK : L.len;
        const float* xr = x + r * L.len;
        float* yr = y + r * L.len;
        auto one = [&](int64_t i, float v) -> float {
            double wi = w, bi = b;
            if (KIND == LAYER) {
                if (weight != nullptr) wi = weight[i];
                if (bias != nullptr) bi = bias[i];
            }
            return (float)(((double)v - mean) * rstd * wi + bi);
        };
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            float4* y4 = reinterpret_cast<float4*>(yr);
            for (int64_t i = begin / 4 + threadIdx.x; i < end / 4; i += THREADS) {
                const float4 v = x4[i];
                y4[i] = make_float4(one(4 * i, v.x), one(4 * i + 1, v.y), one(4 * i + 2, v.z), one(4 * i + 3, v.w));
            }
        } else {
            for (int64_t i = begin + threadIdx.x; i < end; i += THREADS) yr[i] = one(i, xr[i]);
        }
    }
}

const float* optional_float(const torch::Tensor& t, int64_t n, const char* what, const torch::Tensor& x) {
    if (!t.defined() || t.numel() == 0) return nullptr;
    TORCH_CHECK(t.is_cuda() && t.device() == x.device(), what, " must be a CUDA tensor on x's device");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32 && t.is_contiguous(), what, " must be contiguous float32");
    TORCH_CHECK(t.numel() == n, what, " must have ", std::to_string(n), " elements, got ",
                std::to_string(t.numel()));
    return t.data_ptr<float>();
}

torch::Tensor normalize(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor running_mean,
                        torch::Tensor running_var, torch::Tensor batches, int64_t groups, int64_t norm_dims,
                        bool use_batch_stats, bool update_running, double momentum, double eps) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() >= 2, "x must have at least two dimensions (N, C, ...), got ", shape_string(x.sizes()));
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x, at::MemoryFormat::Contiguous);
    if (x.numel() == 0) return y;
    const int64_t N = x.size(0), C = x.size(1), spatial = x.numel() / (N * C);
    Layout L{N * C, spatial, 0, 1, N * C, C};
    int64_t affine_n = C;
    if (KIND == BATCH) {
        L.gmod = C;
        TORCH_CHECK(!use_batch_stats || N * spatial > 1,
                    "batch norm in training mode needs more than one value per channel, got ",
                    shape_string(x.sizes()));
    } else if (KIND == GROUP) {
        TORCH_CHECK(groups > 0 && C % groups == 0, "the ", std::to_string(C), " channels must divide into ",
                    std::to_string(groups), " groups");
        L.gdiv = C / groups;
        L.gmod = N * groups;
    } else if (KIND == LAYER) {
        TORCH_CHECK(norm_dims >= 1 && norm_dims < x.dim(), "normalized_shape must name 1 to ",
                    std::to_string(x.dim() - 1), " trailing dims of x ", shape_string(x.sizes()));
        int64_t len = 1;
        for (int64_t d = x.dim() - norm_dims; d < x.dim(); ++d) len *= x.size(d);
        L = Layout{x.numel() / len, len, 0, 1, x.numel() / len, 1};
        affine_n = len;
    }
    L.chunks = (L.len + CHUNK - 1) / CHUNK;
    const float* w = optional_float(weight, affine_n, "the weight", x);
    const float* b = optional_float(bias, affine_n, "the bias", x);
    float* rm = nullptr;
    float* rv = nullptr;
    int64_t* tracked = nullptr;
    if (KIND == BATCH && running_mean.numel() > 0) {
        rm = const_cast<float*>(optional_float(running_mean, C, "running_mean", x));
        rv = const_cast<float*>(optional_float(running_var, C, "running_var", x));
        TORCH_CHECK(rv != nullptr, "running_var must come with running_mean");
        if (batches.numel() > 0) {
            TORCH_CHECK(batches.is_cuda() && batches.device() == x.device() &&
                        batches.scalar_type() == torch::kInt64 && batches.numel() == 1,
                        "num_batches_tracked must be one int64 on x's device");
            tracked = batches.data_ptr<int64_t>();
        }
    }
    TORCH_CHECK(L.chunks <= INT_MAX, "x's rows are too long: ", shape_string(x.sizes()));
    const bool vec = L.len % 4 == 0 && reinterpret_cast<uintptr_t>(x.data_ptr<float>()) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0;
    auto stream = at::cuda::getCurrentCUDAStream();
    auto stats = torch::empty({2 * L.gmod}, x.options().dtype(torch::kFloat64));
    const dim3 grid((unsigned)L.chunks, (unsigned)std::min<int64_t>(L.rows, MAX_GRID_Y));
    if (!use_batch_stats) {
        TORCH_CHECK(KIND == BATCH && rm != nullptr, "normalizing by running statistics needs them");
        stats_from_running<<<(unsigned)((C + THREADS - 1) / THREADS), THREADS, 0, stream>>>(rm, rv, C, eps,
                                                                                         stats.data_ptr<double>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
        auto part = torch::empty({2 * L.rows * L.chunks}, x.options().dtype(torch::kFloat64));
        row_chunk_sums<<<grid, THREADS, 0, stream>>>(x.data_ptr<float>(), L, vec, part.data_ptr<double>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        const bool update = update_running && rm != nullptr;
        group_stats<<<(unsigned)L.gmod, THREADS, 0, stream>>>(part.data_ptr<double>(), L, eps,
                                                              stats.data_ptr<double>(), update ? rm : nullptr,
                                                              update ? rv : nullptr, tracked, momentum);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        if (update && tracked != nullptr) {
            count_batch<<<1, 1, 0, stream>>>(tracked);
            C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
    }
    normalize_rows<<<grid, THREADS, 0, stream>>>(x.data_ptr<float>(), stats.data_ptr<double>(), w, b, L, vec,
                                                 y.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["normalize"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, @INIT@):
        super().__init__()
        self.@ATTR@ = @MODULE@

    def forward(self, x):
        m = self.@ATTR@
        none = x.new_empty(0)
        weight, bias = getattr(m, "weight", None), getattr(m, "bias", None)
        running_mean, running_var = getattr(m, "running_mean", None), getattr(m, "running_var", None)
        batches = getattr(m, "num_batches_tracked", None)
        running = running_mean is not None and running_var is not None
        momentum = getattr(m, "momentum", None)
        # As torch decides: batch statistics in training mode or where the module keeps no running ones, which
        # training mode updates.
        return _ext.normalize(x.contiguous(), none if weight is None else weight.detach(),
                              none if bias is None else bias.detach(), running_mean if running else none,
                              running_var if running else none,
                              batches if running and batches is not None else none,
                              int(getattr(m, "num_groups", 0)), len(getattr(m, "normalized_shape", ())),
                              bool(m.training or not running), bool(m.training and running),
                              -1.0 if momentum is None else float(momentum), float(m.eps))
'''


def stat_norm_source(name: str) -> str:
    k = STAT_NORMS[name]
    return _fill(
        STAT_NORM_TEMPLATE,
        NAME=name,
        NUMBER=_number(name),
        MODULE=k.module,
        NOTE=k.note,
        KIND=k.kind,
        INIT=k.init,
        ATTR=k.attr,
        HEADERS=_HEADERS,
        BLOCK_SUM=_BLOCK_SUM,
        SHAPE_STRING=_SHAPE_STRING,
    )


class Loss(NamedTuple):
    """One loss of LOSS_TEMPLATE: a mean (or a sum over the batch) of a term of each pair of elements."""

    call: str  # the reference's computation
    term: str  # the body of term(p, t): the float64 term of a prediction p and its target t (doubles)
    broadcast: bool  # targets may have the shape of predictions' trailing dims (broadcast over the leading)
    batchmean: bool  # the sum is divided by predictions.size(0) (reduction='batchmean'), else by the count
    note: str  # for the solution's docstring


LOSSES: dict[str, Loss] = {
    "94_MSELoss": Loss(
        "torch.mean((predictions - targets) ** 2)",
        "const double d = p - t;\n    return d * d;",
        False,
        False,
        "The term: (p - t) ** 2.",
    ),
    "96_HuberLoss": Loss(
        "torch.nn.functional.smooth_l1_loss(predictions, targets)",
        "const double d = fabs(p - t);\n    return d < 1.0 ? 0.5 * d * d : d - 0.5;",
        False,
        False,
        "The term: 0.5 * d * d where d = |p - t| < 1 (beta, torch's default), else d - 0.5.",
    ),
    "98_KLDivLoss": Loss(
        "torch.nn.functional.kl_div(torch.log(predictions), targets, reduction='batchmean')",
        "return (t == 0.0 ? 0.0 : t * log(t)) - t * log(p);",
        False,
        True,
        "The term: xlogy(t, t) - t * log(p) (0 where t == 0, as torch's xlogy), logs in float64; the sum is\n"
        "divided by predictions.size(0) (reduction='batchmean').",
    ),
    "100_HingeLoss": Loss(
        "torch.mean(torch.clamp(1 - predictions * targets, min=0))",
        "const double v = 1.0 - p * t;\n    return v < 0.0 ? 0.0 : v;  // NaN stays NaN, as in torch's clamp",
        True,
        False,
        "The term: max(1 - p * t, 0). Targets broadcast as in torch: the problem's targets, (32768,), meet\n"
        "predictions (32768, 32768) along the last dim (element (i, j) takes targets[j]).",
    ),
}

LOSS_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py:

    @CALL@

a 0-dim float32 tensor, for contiguous float32 predictions and targets.

@NOTE@
Each term is computed in float64 and summed in float64: the first kernel over a fixed grid (at most 2048
blocks of 256 threads, grid-stride), each block's sum folded in a fixed order and written to its own slot of a
float64 buffer; the second, one block, folds the blocks' sums in a fixed order, divides, and rounds once to
float32. No atomics: the result is the same from run to run."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor loss(torch::Tensor predictions, torch::Tensor targets);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t PARTS = 2048;  // at most this many blocks in the first kernel
constexpr bool BROADCAST = @BROADCAST@;  // targets may have the shape of predictions' trailing dims
constexpr bool BATCHMEAN = @BATCHMEAN@;  // divide by predictions.size(0) rather than by the count

@BLOCK_SUM@

@SHAPE_STRING@

// The term of a prediction p and its target t.
__device__ __forceinline__ double term(const double p, const double t) {
    @TERM@
}

// pred has n elements, targ tn: element i of pred meets targ[i % tn] (tn == n where the shapes are the same).
// Each thread keeps that index in j, stepping it by stride % tn, rather than dividing for every element.
// Block b writes its sum to part[b].
__global__ void __launch_bounds__(THREADS) loss_parts(const float* __restrict__ pred,
                                                      const float* __restrict__ targ, int64_t n, int64_t tn,
                                                      double* __restrict__ part) {
    __shared__ double sh[THREADS];
    const int64_t stride = (int64_t)gridDim.x * THREADS;
    const int64_t first = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const int64_t step = stride % tn;
    int64_t j = first % tn;
    double s = 0.0;
#pragma unroll 4
    for (int64_t i = first; i < n; i += stride) {
        s += term(pred[i], targ[j]);
        j += step;
        if (j >= tn) j -= tn;
    }
    const double b = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = b;
}

// One block: *out = (the sum of part[0, parts), folded in a fixed order) / denominator, rounded to float32.
__global__ void __launch_bounds__(THREADS) loss_finish(const double* __restrict__ part, int64_t parts,
                                                       double denominator, float* __restrict__ out) {
    __shared__ double sh[THREADS];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < parts; i += THREADS) s += part[i];
    const double total = block_sum(s, sh);
    if (threadIdx.x == 0) *out = (float)(total / denominator);
}

torch::Tensor loss(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.is_cuda() && targets.is_cuda(), "predictions and targets must be CUDA tensors");
    TORCH_CHECK(predictions.device() == targets.device(), "predictions and targets must be on one device");
    TORCH_CHECK(predictions.scalar_type() == torch::kFloat32 && targets.scalar_type() == torch::kFloat32,
                "predictions and targets must be float32");
    TORCH_CHECK(predictions.is_contiguous() && targets.is_contiguous(),
                "predictions and targets must be contiguous");
    const auto ps = predictions.sizes(), ts = targets.sizes();
    bool shapes_ok = ps.equals(ts);
    if (BROADCAST && !shapes_ok && ts.size() <= ps.size())
        shapes_ok = ps.slice(ps.size() - ts.size()).equals(ts);  // targets: predictions' trailing dims
    TORCH_CHECK(shapes_ok, BROADCAST ? "targets must have the shape of predictions or of its trailing dims"
                                     : "predictions and targets must have the same shape",
                ", got ", shape_string(ps), " and ", shape_string(ts));
    const int64_t n = predictions.numel(), tn = targets.numel();
    const double denominator = BATCHMEAN ? (predictions.dim() > 0 ? (double)predictions.size(0) : 1.0)
                                         : (double)n;
    const c10::cuda::CUDAGuard guard(predictions.device());
    auto out = torch::empty(std::vector<int64_t>{}, predictions.options());
    auto part = torch::empty({PARTS}, predictions.options().dtype(torch::kFloat64));
    auto stream = at::cuda::getCurrentCUDAStream();
    // The grid depends on n alone, so the summation order does too. Nothing to sum: no blocks, a sum of 0.
    const int64_t parts = std::min<int64_t>((n + THREADS - 1) / THREADS, PARTS);
    if (parts > 0) {
        loss_parts<<<(unsigned)parts, THREADS, 0, stream>>>(predictions.data_ptr<float>(),
                                                              targets.data_ptr<float>(), n, tn,
                                                              part.data_ptr<double>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    loss_finish<<<1, THREADS, 0, stream>>>(part.data_ptr<double>(), parts, denominator,
                                           out.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["loss"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return _ext.loss(predictions.contiguous(), targets.contiguous())
'''


# KernelBench level-1 files of the pooling family: max and average pooling over 1, 2 or 3 spatial dims. File ->
# (the reference's module, as built by its __init__; the constructor's parameters; the module's attribute name).
POOLS: dict[str, tuple[str, str, str]] = {
    "41_Max_Pooling_1D": (
        "nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, "
        "return_indices=return_indices)",
        "kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1, return_indices: bool = False",
        "maxpool"),
    "42_Max_Pooling_2D": (
        "nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)",
        "kernel_size: int, stride: int, padding: int, dilation: int", "maxpool"),
    "43_Max_Pooling_3D": (
        "nn.MaxPool3d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, "
        "return_indices=return_indices, ceil_mode=ceil_mode)",
        "kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1, return_indices: bool = False, "
        "ceil_mode: bool = False", "maxpool"),
    "44_Average_Pooling_1D": (
        "nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)",
        "kernel_size: int, stride: int = 1, padding: int = 0", "avg_pool"),
    "45_Average_Pooling_2D": (
        "nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)",
        "kernel_size: int, stride: int = None, padding: int = 0", "avg_pool"),
    "46_Average_Pooling_3D": (
        "nn.AvgPool3d(kernel_size=kernel_size, stride=stride, padding=padding)",
        "kernel_size: int, stride: int = None, padding: int = 0", "avg_pool"),
}

POOL_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py: the reference's @MODULE@, for a contiguous float32 x of shape (N, C, spatial...)
with 1 to 3 spatial dims, ceil_mode off and no indices returned (the problem's settings; others are refused).

One thread per output element (grid-stride), which folds its window in the input: the maximum (a NaN
propagates, padding never wins, as in torch), or the sum in float64 divided by the window's size (with the padding
counted where count_include_pad, torch's default; by divisor_override where set), rounded once to float32. The
module is the reference's, kept under its attribute name, and its settings are read from it at each call."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = ("torch::Tensor pool(torch::Tensor x, std::vector<int64_t> kernel, std::vector<int64_t> stride, "
              "std::vector<int64_t> padding, std::vector<int64_t> dilation, bool is_max, bool count_include_pad, "
              "int64_t divisor_override);")

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t MAX_BLOCKS = 1 << 20;

@SHAPE_STRING@

// Three spatial dims (1- and 2-d pooling lead with dims of size 1, window 1, stride 1, no padding).
struct Window {
    int64_t in[3], out[3], k[3], s[3], p[3], d[3];
};

template <bool IS_MAX>
__global__ void __launch_bounds__(THREADS) pool_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                       int64_t planes, Window w, bool count_include_pad,
                                                       int64_t divisor_override) {
    const int64_t per_plane_out = w.out[0] * w.out[1] * w.out[2], per_plane_in = w.in[0] * w.in[1] * w.in[2];
    const int64_t total = planes * per_plane_out;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
        int64_t rest = o;
        int64_t at[3];
        for (int q = 2; q >= 0; --q) {
            at[q] = rest % w.out[q];
            rest /= w.out[q];
        }
        const float* xp = x + rest * per_plane_in;  // rest is now the plane (n, c)
        int64_t start[3];
        for (int q = 0; q < 3; ++q) start[q] = at[q] * w.s[q] - w.p[q];
        if (IS_MAX) {
            float m = -INFINITY;
            for (int64_t a = 0; a < w.k[0]; ++a) {
                const int64_t i0 = start[0] + a * w.d[0];
                if (i0 < 0 || i0 >= w.in[0]) continue;
                for (int64_t b = 0; b < w.k[1]; ++b) {
                    const int64_t i1 = start[1] + b * w.d[1];
                    if (i1 < 0 || i1 >= w.in[1]) continue;
                    const float* row = xp + (i0 * w.in[1] + i1) * w.in[2];
                    for (int64_t c = 0; c < w.k[2]; ++c) {
                        const int64_t i2 = start[2] + c * w.d[2];
                        if (i2 < 0 || i2 >= w.in[2]) continue;
                        const float v = row[i2];
                        if (v > m || isnan(v)) m = v;  // once NaN, nothing is greater: it stays
                    }
                }
            }
            y[o] = m;
        } else {
            // Average pooling has no dilation. The window clipped to the padded input counts where
            // count_include_pad; the one clipped to the input is what is summed.
            int64_t lo[3], hi[3], padded = 1, inside = 1;
            for (int q = 0; q < 3; ++q) {
                lo[q] = start[q];
                hi[q] = start[q] + w.k[q] < w.in[q] + w.p[q] ? start[q] + w.k[q] : w.in[q] + w.p[q];
                padded *= hi[q] - lo[q];
                lo[q] = lo[q] < 0 ? 0 : lo[q];
                hi[q] = hi[q] > w.in[q] ? w.in[q] : hi[q];
                inside *= hi[q] > lo[q] ? hi[q] - lo[q] : 0;
            }
            double s = 0.0;
            for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
                for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1) {
                    const float* row = xp + (i0 * w.in[1] + i1) * w.in[2];
                    for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) s += (double)row[i2];
                }
            const double divisor = divisor_override > 0 ? (double)divisor_override
                                                        : (double)(count_include_pad ? padded : inside);
            y[o] = (float)(s / divisor);
        }
    }
}

torch::Tensor pool(torch::Tensor x, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, std::vector<int64_t> dilation, bool is_max, bool count_include_pad,
                   int64_t divisor_override) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const int64_t nd = x.dim() - 2;
    TORCH_CHECK(nd >= 1 && nd <= 3, "x must be (N, C, spatial...) with 1 to 3 spatial dims, got ",
                shape_string(x.sizes()));
    TORCH_CHECK((int64_t)kernel.size() == nd && (int64_t)stride.size() == nd && (int64_t)padding.size() == nd &&
                (int64_t)dilation.size() == nd, "kernel, stride, padding and dilation need one value per spatial dim");
    Window w;
    std::vector<int64_t> out_shape{x.size(0), x.size(1)};
    for (int q = 0; q < 3; ++q) {
        const int64_t j = q - (3 - nd);  // the spatial dim this is, or < 0 for a leading dim of size 1
        if (j < 0) {
            w.in[q] = w.out[q] = w.k[q] = w.s[q] = w.d[q] = 1;
            w.p[q] = 0;
            continue;
        }
        w.in[q] = x.size(2 + j);
        w.k[q] = kernel[j];
        w.s[q] = stride[j];
        w.p[q] = padding[j];
        w.d[q] = dilation[j];
        TORCH_CHECK(w.k[q] > 0 && w.s[q] > 0 && w.d[q] > 0 && w.p[q] >= 0 && 2 * w.p[q] <= w.k[q],
                    "kernel, stride and dilation must be positive, padding at most half the kernel");
        const int64_t span = w.d[q] * (w.k[q] - 1) + 1;
        TORCH_CHECK(w.in[q] + 2 * w.p[q] >= span, "the window is larger than the padded input ",
                    shape_string(x.sizes()));
        w.out[q] = (w.in[q] + 2 * w.p[q] - span) / w.s[q] + 1;
        out_shape.push_back(w.out[q]);
    }
    TORCH_CHECK(is_max || (w.d[0] == 1 && w.d[1] == 1 && w.d[2] == 1), "average pooling takes no dilation");
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty(out_shape, x.options());
    const int64_t planes = x.size(0) * x.size(1), total = y.numel();
    if (total == 0) return y;
    const int64_t blocks = std::min<int64_t>((total + THREADS - 1) / THREADS, MAX_BLOCKS);
    auto stream = at::cuda::getCurrentCUDAStream();
    if (is_max)
        pool_kernel<true><<<(unsigned)blocks, THREADS, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), planes,
                                                                   w, count_include_pad, divisor_override);
    else
        pool_kernel<false><<<(unsigned)blocks, THREADS, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                                    planes, w, count_include_pad, divisor_override);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["pool"], extra_cuda_cflags=["-O3"])


def _per_dim(value, nd, default=None):
    """A module's setting as one int per spatial dim (an int, a tuple, or None for `default`)."""
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0):
        value = default
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return [int(value[0])] * nd
        if len(value) != nd:
            raise ValueError(f"expected {nd} values, got {value}")
        return [int(v) for v in value]
    return [int(value)] * nd


class ModelNew(nn.Module):
    def __init__(self, @INIT@):
        super().__init__()
        self.@ATTR@ = @MODULE@

    def forward(self, x):
        m = self.@ATTR@
        nd = x.dim() - 2
        if getattr(m, "ceil_mode", False) or getattr(m, "return_indices", False):
            raise ValueError("this kernel pools with ceil_mode off and returns no indices")
        kernel = _per_dim(m.kernel_size, nd)
        is_max = hasattr(m, "dilation")
        divisor = getattr(m, "divisor_override", None)
        return _ext.pool(x.contiguous(), kernel, _per_dim(m.stride, nd, default=m.kernel_size),
                         _per_dim(m.padding, nd), _per_dim(getattr(m, "dilation", 1), nd), is_max,
                         bool(getattr(m, "count_include_pad", True)), int(divisor) if divisor else 0)
'''


def pool_source(name: str) -> str:
    module, init, attr = POOLS[name]
    return _fill(POOL_TEMPLATE, NAME=name, NUMBER=_number(name), MODULE=module, INIT=init, ATTR=attr,
                 HEADERS=_HEADERS, SHAPE_STRING=_SHAPE_STRING)


# Losses with a term per row (ROW_LOSSES): cross-entropy (95) and the triplet margin loss (99). Each row's term is
# computed by one block in float64, to its own slot; a one-block kernel folds the slots in a fixed order.
_ROW_FINISH = """// One block: *out = (the sum of part[0, rows), folded in a fixed order) / (the sum of counted[0, rows), or
// rows where counted is null), rounded to float32.
__global__ void __launch_bounds__(THREADS) finish(const double* __restrict__ part,
                                                  const double* __restrict__ counted, int64_t rows,
                                                  float* __restrict__ out) {
    __shared__ double sh_s[THREADS], sh_c[THREADS];
    double s = 0.0, c = 0.0;
    for (int64_t i = threadIdx.x; i < rows; i += THREADS) {
        s += part[i];
        c += counted != nullptr ? counted[i] : 1.0;
    }
    const double total = block_sum(s, sh_s), count = block_sum(c, sh_c);
    if (threadIdx.x == 0) *out = (float)(total / count);
}"""

CROSS_ENTROPY_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py:

    torch.nn.functional.cross_entropy(predictions, targets)

a 0-dim float32 tensor: the mean over rows of logsumexp(predictions[r]) - predictions[r, targets[r]], for
contiguous float32 predictions (rows, classes) and int64 class indices (rows,). As torch's defaults: no weight,
no label smoothing, rows whose target is -100 (ignore_index) left out of the sum and of the count. A target
outside [0, classes) makes the loss NaN (torch stops with a device-side assertion).

One block of 256 threads per row: the row's maximum M (a NaN propagates), then the sum of exp(x - M) in float64,
folded in a fixed order, and the row's term M + log(sum) - x[target] in float64, to its own slot. A one-block
kernel folds the rows' terms and counts in a fixed order and divides. No atomics: the same result from run to
run."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor cross_entropy(torch::Tensor predictions, torch::Tensor targets);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t MAX_BLOCKS = 65536;
constexpr int64_t IGNORE_INDEX = -100;  // torch's default

@BLOCK_SUM@

@SHAPE_STRING@

// The larger of a and b, NaN if either is (as torch's max).
__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || isnan(b)) && !isnan(a) ? b : a; }

// Block b does rows b, b + gridDim.x, ...: row r's term to part[r], and whether it counts (0 for an ignored
// target) to counted[r].
__global__ void __launch_bounds__(THREADS) row_terms(const float* __restrict__ x,
                                                     const int64_t* __restrict__ targets, int64_t rows,
                                                     int64_t classes, double* __restrict__ part,
                                                     double* __restrict__ counted) {
    __shared__ float sh_m[THREADS];
    __shared__ double sh[THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * classes;
        float m = -INFINITY;
        for (int64_t j = threadIdx.x; j < classes; j += THREADS) m = nan_max(m, xr[j]);
        sh_m[threadIdx.x] = m;
        __syncthreads();
        for (int half = THREADS / 2; half > 0; half >>= 1) {
            if ((int)threadIdx.x < half) sh_m[threadIdx.x] = nan_max(sh_m[threadIdx.x], sh_m[threadIdx.x + half]);
            __syncthreads();
        }
        const double M = sh_m[0];
        double s = 0.0;
        for (int64_t j = threadIdx.x; j < classes; j += THREADS) s += exp((double)xr[j] - M);
        const double total = block_sum(s, sh);
        if (threadIdx.x == 0) {
            const int64_t t = targets[r];
            if (t == IGNORE_INDEX) {
                part[r] = 0.0;
                counted[r] = 0.0;
            } else {
                part[r] = t >= 0 && t < classes ? M + log(total) - (double)xr[t] : NAN;
                counted[r] = 1.0;
            }
        }
        __syncthreads();  // sh_m and sh are written again for the next row
    }
}

@FINISH@

torch::Tensor cross_entropy(torch::Tensor predictions, torch::Tensor targets) {
    TORCH_CHECK(predictions.is_cuda() && targets.is_cuda() && predictions.device() == targets.device(),
                "predictions and targets must be CUDA tensors on one device");
    TORCH_CHECK(predictions.scalar_type() == torch::kFloat32, "predictions must be float32");
    TORCH_CHECK(targets.scalar_type() == torch::kInt64, "targets must be int64 class indices");
    TORCH_CHECK(predictions.is_contiguous() && targets.is_contiguous(),
                "predictions and targets must be contiguous");
    TORCH_CHECK(predictions.dim() == 2 && targets.dim() == 1 && targets.size(0) == predictions.size(0),
                "predictions must be (rows, classes) and targets (rows,), got ",
                shape_string(predictions.sizes()), " and ", shape_string(targets.sizes()));
    const c10::cuda::CUDAGuard guard(predictions.device());
    const int64_t rows = predictions.size(0), classes = predictions.size(1);
    auto out = torch::empty(std::vector<int64_t>{}, predictions.options());
    auto part = torch::empty({std::max<int64_t>(rows, 1)}, predictions.options().dtype(torch::kFloat64));
    auto counted = torch::empty_like(part);
    auto stream = at::cuda::getCurrentCUDAStream();
    if (rows > 0) {
        TORCH_CHECK(classes > 0, "predictions must have at least one class");
        row_terms<<<(unsigned)std::min<int64_t>(rows, MAX_BLOCKS), THREADS, 0, stream>>>(
            predictions.data_ptr<float>(), targets.data_ptr<int64_t>(), rows, classes, part.data_ptr<double>(),
            counted.data_ptr<double>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    finish<<<1, THREADS, 0, stream>>>(part.data_ptr<double>(), counted.data_ptr<double>(), rows,
                                      out.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["cross_entropy"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return _ext.cross_entropy(predictions.contiguous(), targets.contiguous())
'''

TRIPLET_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py:

    torch.nn.TripletMarginLoss(margin=margin)(anchor, positive, negative)

a 0-dim float32 tensor: the mean over rows of max(margin + d(a, p) - d(a, n), 0), where d(u, v) is the
Euclidean norm of u - v + eps (eps = 1e-6, as torch's pairwise_distance adds it), for contiguous float32 inputs
of one shape (rows, features). The module's p must be 2 and swap False (its defaults, as the reference's).

One block of 256 threads per row: both sums of squares in float64 (float4 loads where the rows are 16-byte
aligned), folded in a fixed order, and the row's term in float64 to its own slot (a NaN stays NaN, as in torch's
clamp). A one-block kernel folds the rows' terms in a fixed order and divides by the rows. No atomics: the same
result from run to run."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = ("torch::Tensor triplet_margin(torch::Tensor anchor, torch::Tensor positive, torch::Tensor negative, "
              "double margin, double eps);")

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int64_t MAX_BLOCKS = 65536;

@BLOCK_SUM@

@SHAPE_STRING@

// Block b does rows b, b + gridDim.x, ...: row r's term to part[r].
__global__ void __launch_bounds__(THREADS) row_terms(const float* __restrict__ a, const float* __restrict__ p,
                                                     const float* __restrict__ n, int64_t rows, int64_t D,
                                                     double margin, double eps, bool vec,
                                                     double* __restrict__ part) {
    __shared__ double sh_p[THREADS], sh_n[THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t at = r * D;
        double sp = 0.0, sn = 0.0;
        if (vec) {
            const float4* a4 = reinterpret_cast<const float4*>(a + at);
            const float4* p4 = reinterpret_cast<const float4*>(p + at);
            const float4* n4 = reinterpret_cast<const float4*>(n + at);
            for (int64_t i = threadIdx.x; i < D / 4; i += THREADS) {
                const float4 u = a4[i], v = p4[i], w = n4[i];
                const double p0 = (double)u.x - v.x + eps, p1 = (double)u.y - v.y + eps;
                const double p2 = (double)u.z - v.z + eps, p3 = (double)u.w - v.w + eps;
                const double n0 = (double)u.x - w.x + eps, n1 = (double)u.y - w.y + eps;
                const double n2 = (double)u.z - w.z + eps, n3 = (double)u.w - w.w + eps;
                sp += (p0 * p0 + p1 * p1) + (p2 * p2 + p3 * p3);
                sn += (n0 * n0 + n1 * n1) + (n2 * n2 + n3 * n3);
            }
        } else {
            for (int64_t i = threadIdx.x; i < D; i += THREADS) {
                const double dp = (double)a[at + i] - p[at + i] + eps, dn = (double)a[at + i] - n[at + i] + eps;
                sp += dp * dp;
                sn += dn * dn;
            }
        }
        const double P = block_sum(sp, sh_p), N = block_sum(sn, sh_n);
        if (threadIdx.x == 0) {
            const double l = margin + sqrt(P) - sqrt(N);
            part[r] = l < 0.0 ? 0.0 : l;  // a NaN stays NaN
        }
        __syncthreads();  // sh_p and sh_n are written again for the next row
    }
}

@FINISH@

torch::Tensor triplet_margin(torch::Tensor anchor, torch::Tensor positive, torch::Tensor negative, double margin,
                             double eps) {
    for (const auto* t : {&anchor, &positive, &negative}) {
        TORCH_CHECK(t->is_cuda() && t->device() == anchor.device(), "the inputs must be CUDA tensors on one device");
        TORCH_CHECK(t->scalar_type() == torch::kFloat32 && t->is_contiguous(), "the inputs must be contiguous float32");
        TORCH_CHECK(t->sizes().equals(anchor.sizes()), "the inputs must have one shape, got ",
                    shape_string(anchor.sizes()), " and ", shape_string(t->sizes()));
    }
    TORCH_CHECK(anchor.dim() == 2, "the inputs must be (rows, features), got ", shape_string(anchor.sizes()));
    const c10::cuda::CUDAGuard guard(anchor.device());
    const int64_t rows = anchor.size(0), D = anchor.size(1);
    auto out = torch::empty(std::vector<int64_t>{}, anchor.options());
    auto part = torch::empty({std::max<int64_t>(rows, 1)}, anchor.options().dtype(torch::kFloat64));
    auto stream = at::cuda::getCurrentCUDAStream();
    bool vec = D % 4 == 0;
    for (const auto* t : {&anchor, &positive, &negative})
        vec = vec && reinterpret_cast<uintptr_t>(t->data_ptr<float>()) % 16 == 0;
    if (rows > 0) {
        row_terms<<<(unsigned)std::min<int64_t>(rows, MAX_BLOCKS), THREADS, 0, stream>>>(
            anchor.data_ptr<float>(), positive.data_ptr<float>(), negative.data_ptr<float>(), rows, D, margin, eps,
            vec, part.data_ptr<double>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    finish<<<1, THREADS, 0, stream>>>(part.data_ptr<double>(), nullptr, rows, out.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["triplet_margin"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.loss_fn = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        m = self.loss_fn
        if m.p != 2 or m.swap:
            raise ValueError(f"this kernel computes p=2 distances without swap; the module has p={m.p}, "
                             f"swap={m.swap}")
        return _ext.triplet_margin(anchor.contiguous(), positive.contiguous(), negative.contiguous(),
                                   float(m.margin), float(m.eps))
'''

# KernelBench level-1 file -> its template, of the row losses.
ROW_LOSSES: dict[str, str] = {"95_CrossEntropyLoss": CROSS_ENTROPY_TEMPLATE, "99_TripletMarginLoss": TRIPLET_TEMPLATE}


def row_loss_source(name: str) -> str:
    return _fill(ROW_LOSSES[name], NAME=name, NUMBER=_number(name), HEADERS=_HEADERS, BLOCK_SUM=_BLOCK_SUM,
                 SHAPE_STRING=_SHAPE_STRING, FINISH=_ROW_FINISH)


# KernelBench level-1 file -> (the reference's computation, reversed (a suffix sum), exclusive (the element
# itself left out), masked (forward(x, mask), x * mask scanned), product (a running product, not a sum)).
SCANS: dict[str, tuple[str, bool, bool, bool, bool]] = {
    "89_cumsum": ("torch.cumsum(x, dim=dim)", False, False, False, False),
    "91_cumsum_reverse": ("torch.cumsum(x.flip(dim), dim=dim).flip(dim)", True, False, False, False),
    # The reference prepends a zero column to the cumsum of x without its last column: y[j] = sum of x[k < j].
    "92_cumsum_exclusive": ("cat((zeros, torch.cumsum(x[..., :-1], dim=dim)), dim=dim)", False, True, False, False),
    "93_masked_cumsum": ("torch.cumsum(x * mask, dim=dim)", False, False, True, False),
    "90_cumprod": ("torch.cumprod(x, dim=dim)", False, False, False, True),
}

SCAN_TEMPLATE = '''"""Honest CUDA solution for KernelBench level1/@NAME@.py, written by
benchmarks/kernelbench_solutions.py:

    y = @CALL@

for a contiguous float32 x@MASK_DOC@, over its last dimension (dim 1 of the problem's 32768 x 32768;
another dim is refused).

One block of 256 threads per row, in tiles of 2048 elements@ORDER_DOC@. A tile is loaded into shared memory
(coalesced; padded by one word in 33 so that the reads below meet no bank conflicts), each thread combines
its 8 contiguous elements into their @OP_DOC@ in float64, the block scans those @OP_DOC@s in float64 (shuffles within a warp, the warps'
totals in order), and each thread writes its elements' @KIND_DOC@ @OP_DOC@s, the float64 running @OP_DOC@ rounded
once to float32, back to shared memory; the tile is then stored, coalesced, and its total carried to the next."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = "torch::Tensor scan(torch::Tensor x@MASK_ARG@, int64_t dim);"

CUDA_SOURCE = r"""
@HEADERS@

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int PER = 8;                 // contiguous elements of a tile per thread
constexpr int TILE = THREADS * PER;    // elements of a row per tile
constexpr bool REVERSE = @REVERSE@;      // y[j] sums x[k] for k >= j (the row scanned from its end)
constexpr bool EXCLUSIVE = @EXCLUSIVE@;  // y[j] leaves x[j] out
constexpr bool MASKED = @MASKED@;        // x[j] * mask[j] is scanned
constexpr bool PRODUCT = @PRODUCT@;      // a running product rather than a sum
constexpr double IDENTITY = PRODUCT ? 1.0 : 0.0;

// The scan's operation, in float64.
__device__ __forceinline__ double combine(double a, double b) { return PRODUCT ? a * b : a + b; }

// Slot of tile element k in shared memory: one word of padding after every 32.
__device__ __forceinline__ int pad(int k) { return k + (k >> 5); }

// x, mask (when MASKED) and y are (rows, R), contiguous; block b scans row b. Scan position c (0 first)
// is element c of the row, or element R - 1 - c when REVERSE.
__global__ void __launch_bounds__(THREADS) scan_rows(const float* __restrict__ x,
                                                     const bool* __restrict__ mask, float* __restrict__ y,
                                                     int64_t R) {
    __shared__ float tile[TILE + TILE / 32];
    __shared__ double warp_total[WARPS];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int64_t row = (int64_t)blockIdx.x * R;
    double carry = IDENTITY;  // the earlier tiles combined (in scan order); the same in every thread
    for (int64_t base = 0; base < R; base += TILE) {
        // Scan position base + k into tile[pad(k)], the identity past the row's end.
        for (int q = 0; q < PER; ++q) {
            const int k = q * THREADS + t;
            const int64_t c = base + k;
            float v = (float)IDENTITY;
            if (c < R) {
                const int64_t at = row + (REVERSE ? R - 1 - c : c);
                v = x[at];
                if (MASKED) v *= mask[at] ? 1.f : 0.f;  // as x * mask: a masked-out inf or NaN gives NaN
            }
            tile[pad(k)] = v;
        }
        __syncthreads();
        // This thread's chunk: tile elements t * PER + [0, PER).
        double chunk = IDENTITY;
        for (int q = 0; q < PER; ++q) chunk = combine(chunk, (double)tile[pad(t * PER + q)]);
        // The chunks before this thread's combined: within the warp by shuffles, then the earlier warps'.
        double incl = chunk;
        for (int off = 1; off < 32; off <<= 1) {
            const double o = __shfl_up_sync(0xffffffffu, incl, off);
            if (lane >= off) incl = combine(o, incl);
        }
        double excl = __shfl_up_sync(0xffffffffu, incl, 1);
        if (lane == 0) excl = IDENTITY;
        if (lane == 31) warp_total[warp] = incl;
        __syncthreads();
        double before = IDENTITY, tile_total = IDENTITY;
        for (int w = 0; w < WARPS; ++w) {
            if (w == warp) before = tile_total;
            tile_total = combine(tile_total, warp_total[w]);
        }
        // The chunk's outputs over its inputs: no other thread reads these slots until the barrier below.
        double run = combine(combine(carry, before), excl);
        for (int q = 0; q < PER; ++q) {
            const int k = pad(t * PER + q);
            const double v = (double)tile[k];
            if (!EXCLUSIVE) run = combine(run, v);
            tile[k] = (float)run;
            if (EXCLUSIVE) run = combine(run, v);
        }
        __syncthreads();
        for (int q = 0; q < PER; ++q) {
            const int k = q * THREADS + t;
            const int64_t c = base + k;
            if (c < R) y[row + (REVERSE ? R - 1 - c : c)] = tile[pad(k)];
        }
        carry = combine(carry, tile_total);
        __syncthreads();  // the tile and warp_total are written again by the next tile
    }
}

torch::Tensor scan(torch::Tensor x@MASK_ARG@, int64_t dim) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    const int64_t nd = x.dim();
    TORCH_CHECK(nd > 0, "x must have at least one dimension");
    const int64_t d = dim < 0 ? dim + nd : dim;
    // Integers reach the messages as strings: streaming an int64_t into one crashed a torch build (2.11).
    TORCH_CHECK(d == nd - 1, "scans the last dimension only (", std::to_string(nd - 1),
                " or -1 for a tensor of ", std::to_string(nd), " dimensions), got dim ", std::to_string(dim));
    @MASK_CHECK@
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x, at::MemoryFormat::Contiguous);
    if (x.numel() == 0) return y;
    const int64_t R = x.size(nd - 1), rows = x.numel() / R;
    TORCH_CHECK(rows <= INT_MAX, "too many rows: ", std::to_string(rows));
    scan_rows<<<(unsigned)rows, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(),
                                                                                @MASK_PTR@,
                                                                                y.data_ptr<float>(), R);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kh_kb_l1_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["scan"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = int(dim)

    def forward(self@FORWARD_ARGS@):
        return _ext.scan(@CALL_ARGS@, self.dim)
'''

_SCAN_MASK_CHECK = """TORCH_CHECK(mask.is_cuda() && mask.device() == x.device(),
                "mask must be a CUDA tensor on x's device");
    TORCH_CHECK(mask.scalar_type() == torch::kBool, "mask must be bool");
    TORCH_CHECK(mask.is_contiguous(), "mask must be contiguous");
    TORCH_CHECK(mask.sizes().equals(x.sizes()), "mask must have x's shape");"""


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


def _number(name: str) -> str:
    return name.split("_")[0]


def scaling_source(name: str) -> str:
    return _fill(SCALING_TEMPLATE, NAME=name, NUMBER=_number(name), HEADERS=_HEADERS, ALIGNED=_ALIGNED)


def row_norm_source(name: str) -> str:
    call, term, inv = ROW_NORMS[name]
    return _fill(
        ROW_NORM_TEMPLATE,
        NAME=name,
        NUMBER=_number(name),
        CALL=call,
        TERM=term,
        INV=inv,
        HEADERS=_HEADERS,
        BLOCK_SUM=_BLOCK_SUM,
    )


def frobenius_source(name: str) -> str:
    return _fill(
        FROBENIUS_TEMPLATE,
        NAME=name,
        NUMBER=_number(name),
        HEADERS=_HEADERS,
        ALIGNED=_ALIGNED,
        BLOCK_SUM=_BLOCK_SUM,
    )


def rms_norm_source(name: str) -> str:
    return _fill(RMS_NORM_TEMPLATE, NAME=name, NUMBER=_number(name), HEADERS=_HEADERS)


def loss_source(name: str) -> str:
    k = LOSSES[name]
    return _fill(
        LOSS_TEMPLATE,
        NAME=name,
        NUMBER=_number(name),
        CALL=k.call,
        NOTE=k.note,
        TERM=k.term,
        BROADCAST="true" if k.broadcast else "false",
        BATCHMEAN="true" if k.batchmean else "false",
        HEADERS=_HEADERS,
        BLOCK_SUM=_BLOCK_SUM,
        SHAPE_STRING=_SHAPE_STRING,
    )


def scan_source(name: str) -> str:
    call, reverse, exclusive, masked, product = SCANS[name]
    return _fill(
        SCAN_TEMPLATE,
        NAME=name,
        NUMBER=_number(name),
        CALL=call,
        HEADERS=_HEADERS,
        REVERSE="true" if reverse else "false",
        EXCLUSIVE="true" if exclusive else "false",
        MASKED="true" if masked else "false",
        PRODUCT="true" if product else "false",
        OP_DOC="product" if product else "sum",
        MASK_DOC=" and a bool mask of its shape" if masked else "",
        ORDER_DOC=", scanned from the row's end" if reverse else "",
        KIND_DOC="exclusive" if exclusive else "inclusive",
        MASK_ARG=", torch::Tensor mask" if masked else "",
        MASK_CHECK=_SCAN_MASK_CHECK if masked else "// no mask",
        MASK_PTR="mask.data_ptr<bool>()" if masked else "nullptr",
        FORWARD_ARGS=", x, mask" if masked else ", x",
        CALL_ARGS="x.contiguous(), mask.contiguous()" if masked else "x.contiguous()",
    )


# KernelBench level-2 "Linear, then elementwise ops" problems (GEMMS): the reference's nn.Linear (weight N x K,
# the optional bias) and what follows it, fused into one float32 GEMM whose store applies the rest.
class Gemm(NamedTuple):
    """One level-2 problem of the GEMM family; GEMM_TEMPLATE shows where each field goes."""

    call: str  # the reference's forward after its Linear, for the docstring
    init: str  # the constructor's parameters, as the reference's (KernelBench passes them positionally)
    linear: str  # the reference's name for its nn.Linear, so that its state_dict entries load into ours
    linear_args: str  # the nn.Linear's arguments, as the reference builds it
    params: str  # the Python floats (p0, p1, p2) the store's expression takes
    epilogue: str  # the CUDA body that returns y from t (the GEMM's value plus the bias) and p0, p1, p2
    extra: str = ""  # a line of the constructor after the Linear (a separate bias Parameter), or ""
    bias: str = ""  # the bias tensor, where it is not the Linear's own


_GELU_ERF = "0.5f * u * (1.f + erff(u * 0.70710678118654752f))"
_MISH = "t * tanhf(log1pf(expf(t)))"

GEMMS: dict[str, Gemm] = {
    "9_Matmul_Subtract_Multiply_ReLU": Gemm(
        "relu((x - subtract_value) * multiply_value)", "in_features, out_features, subtract_value, multiply_value",
        "linear", "in_features, out_features", "(float(subtract_value), float(multiply_value), 0.0)",
        "return fmaxf((t - p0) * p1, 0.f);"),
    "12_Gemm_Multiply_LeakyReLU": Gemm(
        "leaky_relu(x * multiplier, negative_slope)", "in_features, out_features, multiplier, negative_slope",
        "gemm", "in_features, out_features", "(float(multiplier), float(negative_slope), 0.0)",
        "const float u = t * p0;\n    return u > 0.f ? u : u * p1;"),
    "29_Matmul_Mish_Mish": Gemm(
        "mish(mish(x))", "in_features, out_features", "linear", "in_features, out_features", "(0.0, 0.0, 0.0)",
        f"t = {_MISH};\n    return {_MISH};"),
    "40_Matmul_Scaling_ResidualAdd": Gemm(
        "x * scaling_factor + x", "in_features, out_features, scaling_factor", "matmul",
        "in_features, out_features", "(float(scaling_factor), 0.0, 0.0)",
        "return __fadd_rn(__fmul_rn(t, p0), t);  // rounded as the reference rounds: the product, then the sum"),
    "53_Gemm_Scaling_Hardtanh_GELU": Gemm(
        "gelu(hardtanh(x * scaling_factor, hardtanh_min, hardtanh_max))",
        "in_features, out_features, scaling_factor, hardtanh_min, hardtanh_max", "gemm",
        "in_features, out_features", "(float(scaling_factor), float(hardtanh_min), float(hardtanh_max))",
        f"const float u = fminf(fmaxf(t * p0, p1), p2);\n    return {_GELU_ERF};"),
    "59_Matmul_Swish_Scaling": Gemm(
        "x * sigmoid(x) * scaling_factor", "in_features, out_features, scaling_factor", "matmul",
        "in_features, out_features", "(float(scaling_factor), 0.0, 0.0)",
        "return t / (1.f + expf(-t)) * p0;"),
    "63_Gemm_ReLU_Divide": Gemm(
        "relu(x) / divisor", "in_features, out_features, divisor", "linear", "in_features, out_features",
        "(float(divisor), 0.0, 0.0)", "return fmaxf(t, 0.f) / p0;"),
    "70_Gemm_Sigmoid_Scaling_ResidualAdd": Gemm(
        "sigmoid(x) * scaling_factor + x", "input_size, hidden_size, scaling_factor", "gemm",
        "input_size, hidden_size", "(float(scaling_factor), 0.0, 0.0)",
        "return 1.f / (1.f + expf(-t)) * p0 + t;"),
    "76_Gemm_Add_ReLU": Gemm(
        "relu(x + bias), the Linear without its own bias", "in_features, out_features, bias_shape", "gemm",
        "in_features, out_features, bias=False", "(0.0, 0.0, 0.0)", "return fmaxf(t, 0.f);",
        extra="self.bias = nn.Parameter(torch.randn(bias_shape))", bias="self.bias"),
    "81_Gemm_Swish_Divide_Clamp_Tanh_Clamp": Gemm(
        "clamp(tanh(clamp(x * sigmoid(x) / 2, -1, 1)), -1, 1)", "in_features, out_features, bias=True", "gemm",
        "in_features, out_features, bias=bias", "(0.0, 0.0, 0.0)",
        "const float s = fminf(fmaxf(t / (1.f + expf(-t)) * 0.5f, -1.f), 1.f);\n"
        "    return fminf(fmaxf(tanhf(s), -1.f), 1.f);"),
    "86_Matmul_Divide_GELU": Gemm(
        "gelu(x / divisor)", "input_size, output_size, divisor", "linear", "input_size, output_size",
        "(float(divisor), 0.0, 0.0)", f"const float u = t / p0;\n    return {_GELU_ERF};"),
}

# The GEMM itself is the one of the bundled example examples/gpu/cuda/gemm_gelu_scale.py (accepted on an H200
# on 2026-11-30, before the precision rule existed: docs/GPU_RUNS.md), taken from that file when the solutions are written, so that the project holds it once.
GEMM_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gpu" / "cuda" / "gemm_gelu_scale.py"


def _example_sgemm() -> str:
    text = GEMM_EXAMPLE.read_text()
    start, end = text.find("// Single-precision GEMM"), text.find("struct BiasGeluScale")
    if start < 0 or end < start:
        raise ValueError(f"{GEMM_EXAMPLE} no longer holds its sgemm_128 kernel where this script looks for it")
    return text[start:end].rstrip()


GEMM_TEMPLATE = '''"""Honest CUDA solution for KernelBench level2/@NAME@.py, written by
benchmarks/kernelbench_solutions.py: x @ weight.T (+ bias), then @CALL@, in one kernel.

A float32 GEMM (full float32 FMAs, no TF32: a 128 x 128 tile per block, 8 x 8 outputs per thread), whose store
computes the rest of the forward on each value in float32. The Linear's parameters are the reference's
(they load by name from its state_dict)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = ("torch::Tensor linear_epilogue(torch::Tensor x, torch::Tensor w, torch::Tensor b, double p0, "
              "double p1, double p2);")

CUDA_SOURCE = r"""
@HEADERS@

@SGEMM@

// y from t, the GEMM's value plus the bias.
__device__ __forceinline__ float epilogue(float t, const float p0, const float p1, const float p2) {
    @EPILOGUE@
}

struct Store {
    float* y; const float* bias; int n; float p0, p1, p2;
    __device__ void operator()(float v, int i, int j) const {
        y[(size_t)i * n + j] = epilogue(bias ? v + bias[j] : v, p0, p1, p2);
    }
};

torch::Tensor linear_epilogue(torch::Tensor x, torch::Tensor w, torch::Tensor b, double p0, double p1,
                              double p2) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "x, the weight and the bias must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                b.scalar_type() == torch::kFloat32, "x, the weight and the bias must be float32");
    TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && b.is_contiguous(), "the tensors must be contiguous");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1),
                "x (M x K) and the weight (N x K) must agree");
    TORCH_CHECK(b.numel() == 0 || b.numel() == w.size(0), "the bias must have the weight's N elements, or none");
    TORCH_CHECK(x.size(0) < INT_MAX && w.size(0) < INT_MAX && x.size(1) < INT_MAX, "dimensions too large");
    const c10::cuda::CUDAGuard guard(x.device());
    const int M = x.size(0), K = x.size(1), N = w.size(0);
    auto y = torch::empty({M, N}, x.options());
    if (M == 0 || N == 0) return y;
    launch_sgemm<true>(x.data_ptr<float>(), w.data_ptr<float>(), M, N, K,
                       Store{y.data_ptr<float>(), b.numel() ? b.data_ptr<float>() : nullptr, N,
                             (float)p0, (float)p1, (float)p2});
    return y;
}
"""

_ext = load_inline(name="kh_kb_l2_@NUMBER@", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                   functions=["linear_epilogue"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, @INIT@):
        super().__init__()
        self.@LINEAR@ = nn.Linear(@LINEAR_ARGS@)
        @EXTRA@
        self.p = @PARAMS@

    def forward(self, x):
        b = @BIAS@
        return _ext.linear_epilogue(x.contiguous(), self.@LINEAR@.weight, b if b is not None else x.new_empty(0),
                                    *self.p)
'''


def gemm_source(name: str) -> str:
    g = GEMMS[name]
    return _fill(
        GEMM_TEMPLATE,
        NAME=name,
        NUMBER=_number(name),
        CALL=g.call,
        HEADERS=_HEADERS,
        SGEMM=_example_sgemm(),
        EPILOGUE=g.epilogue,
        INIT=g.init,
        LINEAR=g.linear,
        LINEAR_ARGS=g.linear_args,
        EXTRA=g.extra or "# no parameter beside the Linear's",
        PARAMS=g.params,
        BIAS=g.bias or f"self.{g.linear}.bias",
    )


# The families filled by _fill: (their problems, the function that writes one problem's solution).
FAMILIES: tuple[tuple[str, tuple[str, ...], Callable[[str], str]], ...] = (
    ("level1", tuple(ELEMENTWISE), source),
    ("level1", tuple(REDUCTIONS), reduction_source),
    ("level1", tuple(SOFTMAXES), softmax_source),
    ("level1", SCALINGS, scaling_source),
    ("level1", tuple(ROW_NORMS), row_norm_source),
    ("level1", FROBENIUS_NORMS, frobenius_source),
    ("level1", RMS_NORMS, rms_norm_source),
    ("level1", tuple(STAT_NORMS), stat_norm_source),
    ("level1", tuple(LOSSES), loss_source),
    ("level1", tuple(ROW_LOSSES), row_loss_source),
    ("level1", tuple(POOLS), pool_source),
    ("level1", tuple(SCANS), scan_source),
    ("level2", tuple(GEMMS), gemm_source),
)


def all_solutions() -> list[tuple[str, str, Callable[[str], str]]]:
    """(level folder, problem name, the function that writes its source) for every solution this script writes."""
    return [(level, name, write) for level, names, write in FAMILIES for name in names]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    counts: dict[str, int] = {}
    for level, name, write in all_solutions():
        folder = args.out / level
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.py").write_text(write(name))
        counts[level] = counts.get(level, 0) + 1
    print(", ".join(f"{n} solutions in {args.out / level}" for level, n in counts.items()))


if __name__ == "__main__":
    main()
