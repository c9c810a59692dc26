"""Transformer MLP block (pre-norm, GELU, residual). Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "Transformer MLP block (pre-norm, GELU, residual)",
    "level": 3,
    "description": (
        "y = x + fc2(gelu(fc1(norm(x)))) with norm = nn.LayerNorm(1024) (norm.weight, norm.bias), fc1 = "
        "nn.Linear(1024, 4096), fc2 = nn.Linear(4096, 1024) (fc1.weight, fc1.bias, fc2.weight, fc2.bias) and "
        "exact (erf) GELU. Input float32 (8192, 1024); output the same shape. TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

TOKENS = 8192
DIM = 1024
HIDDEN = 4096


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
