"""Writes honest CUDA solutions for KernelBench level 1's elementwise problems, for benchmarks/kernelbench_batch.py.

    python benchmarks/kernelbench_solutions.py --out DIR

DIR/level1/<N>_<Name>.py, a mirror of KernelBench's tree (import_generations reads the problem from the path).
Each is one self-contained file, as a solution must be: a float4 grid-stride kernel (and a tail kernel for what
is left of a multiple of four) through torch.utils.cpp_extension.load_inline, computing the problem's function in
float32 with the accurate CUDA math functions (expf, erff, tanhf, expm1f, log1pf), so that the precision rule's
comparison against float64 passes. Every problem takes one contiguous float32 tensor of 4096 x 393216 (6 GiB);
ELU and LeakyReLU also take their constructor's parameter, as the reference Model does.

The kernels are written here once, from one template and a table of expressions, rather than twelve copies.
"""

from __future__ import annotations

import argparse
from pathlib import Path

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


def source(name: str) -> str:
    expression, parameter = ELEMENTWISE[name]
    if parameter is None:
        signature, value = "", "0.0"
    else:
        signature, value = f", {parameter[0]}: float = {parameter[1]!r}", f"float({parameter[0]})"
    return TEMPLATE.format(name=name, expression=expression, number=name.split("_")[0], signature=signature,
                           parameter=value)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    folder = args.out / "level1"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ELEMENTWISE:
        (folder / f"{name}.py").write_text(source(name))
    print(f"{len(ELEMENTWISE)} solutions in {folder}")


if __name__ == "__main__":
    main()
