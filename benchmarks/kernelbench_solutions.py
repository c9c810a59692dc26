"""Writes honest CUDA solutions for KernelBench level 1's elementwise and dimension-reduction problems, for
benchmarks/kernelbench_batch.py.

    python benchmarks/kernelbench_solutions.py --out DIR

DIR/level1/<N>_<Name>.py, a mirror of KernelBench's tree (import_generations reads the problem from the path).
Each is one self-contained file, as a solution must be, building its kernels through
torch.utils.cpp_extension.load_inline.

Elementwise (ELEMENTWISE, twelve problems): a float4 grid-stride kernel (and a tail kernel for what is left of
a multiple of four), computing the problem's function in float32 with the accurate CUDA math functions (expf,
erff, tanhf, expm1f, log1pf), so that the precision rule's comparison against float64 passes. Every problem
takes one contiguous float32 tensor of 4096 x 393216 (6 GiB); ELU and LeakyReLU also take their constructor's
parameter, as the reference Model does.

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

The kernels are written here once, from a template and a table for each family, rather than eighteen copies.
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
    print(f"{len(ELEMENTWISE) + len(REDUCTIONS)} solutions in {folder}")


if __name__ == "__main__":
    main()
