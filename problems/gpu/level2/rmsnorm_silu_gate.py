"""RMS normalisation with a SiLU gate (bfloat16). Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "RMS normalisation with a SiLU gate (bfloat16)",
    "level": 2,
    "description": (
        "Gated RMSNorm as in many LLM blocks, on bfloat16 x and gate of shape (32768, 8192): y = bf16(x * "
        "rsqrt(mean(x^2) + eps) * weight) * silu(gate), with the statistics computed in float32, eps 1e-6 and"
        " a float32 weight of shape (8192,). Output bfloat16 (32768, 8192). Eager runs about eight kernels; "
        "one fused pass is enough."
    ),
    "atol": 0.02,
    "rtol": 0.02,
}

ROWS = 32768
DIM = 8192


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.eps = 1e-6
        self.weight = nn.Parameter(1 + 0.2 * torch.randn(dim))

    def forward(self, x, gate):
        xf = x.float()
        inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * inv_rms * self.weight).to(x.dtype) * F.silu(gate)


def get_inputs():
    return [torch.randn(ROWS, DIM).bfloat16(), torch.randn(ROWS, DIM).bfloat16()]


def get_init_inputs():
    return [DIM]
