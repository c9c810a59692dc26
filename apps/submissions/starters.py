"""Starter templates: a ModelNew skeleton with load_inline for a problem's track.

The reference is parsed with `ast` (the site never executes a problem file) to copy the argument names of
Model.__init__ and Model.forward, so the skeleton already has the right signatures.
"""

from __future__ import annotations

import ast

LANGUAGE_FOR_DEVICE = {"cpu": "cpp", "cuda": "cuda"}


def _model_signatures(reference_source: str) -> tuple[list[str], list[str]]:
    """(init args, forward args) of class Model, without self; defaults: ([], ["x"])."""
    init_args: list[str] = []
    forward_args: list[str] = ["x"]
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return init_args, forward_args
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in ("__init__", "forward"):
                    names = [a.arg for a in item.args.posonlyargs + item.args.args][1:]
                    names += [a.arg for a in item.args.kwonlyargs]
                    if item.name == "__init__":
                        init_args = names
                    elif names:
                        forward_args = names
    return init_args, forward_args


def _init_block(init_args: list[str]) -> str:
    params = ", ".join(init_args)
    keep = "".join(f"        self.{a} = {a}\n" for a in init_args)
    return (
        f"    def __init__(self{', ' + params if params else ''}):\n"
        "        super().__init__()\n"
        "        # If Model creates parameters (nn.Linear, nn.Conv2d...), create the same ones in the same order:\n"
        "        # the checker seeds both constructions alike, so equal weights need equal creation order.\n"
        f"{keep}"
    )


def _cpp_starter(init_args: list[str], forward_args: list[str]) -> str:
    tensors = ", ".join(f"torch::Tensor {a}" for a in forward_args)
    first = forward_args[0]
    return f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# C++ for the CPU track. Every forward argument is taken as a tensor: change the types where Model's are not.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor forward({tensors}) {{
    TORCH_CHECK({first}.is_contiguous() && {first}.scalar_type() == torch::kFloat32,
                "expected a contiguous float32 tensor");
    auto out = torch::empty_like({first});
    const float* in = {first}.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = {first}.numel();
    // Replace this copy loop with the problem's computation.
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) {{
        o[i] = in[i];
    }}
    return out;
}}
"""

module = load_inline(
    name="kernelhub_starter",
    cpp_sources=cpp_source,
    functions=["forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
{_init_block(init_args)}
    def forward(self, {", ".join(forward_args)}):
        return module.forward({", ".join(forward_args)})
'''


def _cuda_starter(init_args: list[str], forward_args: list[str]) -> str:
    tensors = ", ".join(f"torch::Tensor {a}" for a in forward_args)
    first = forward_args[0]
    return f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# CUDA for the GPU track. Every forward argument is taken as a tensor: change the types where Model's are not.
cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void starter_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t n) {{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {{
        out[i] = in[i];  // Replace this copy with the problem's computation.
    }}
}}

torch::Tensor forward({tensors}) {{
    TORCH_CHECK({first}.is_cuda() && {first}.is_contiguous() && {first}.scalar_type() == torch::kFloat32,
                "expected a contiguous float32 CUDA tensor");
    auto out = torch::empty_like({first});
    const int64_t n = {first}.numel();
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    starter_kernel<<<blocks, threads>>>({first}.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}}
"""

cpp_source = "torch::Tensor forward({tensors});"

module = load_inline(
    name="kernelhub_starter",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
{_init_block(init_args)}
    def forward(self, {", ".join(forward_args)}):
        return module.forward({", ".join(forward_args)})
'''


def starter_source(*, reference_source: str, language: str) -> str:
    """A ModelNew skeleton in `language` ("cpp" or "cuda") matching the reference's signatures."""
    init_args, forward_args = _model_signatures(reference_source)
    if language == "cpp":
        return _cpp_starter(init_args, forward_args)
    if language == "cuda":
        return _cuda_starter(init_args, forward_args)
    raise ValueError(f"No starter template for language {language!r}: use 'cpp' or 'cuda'.")
