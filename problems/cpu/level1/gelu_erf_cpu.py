"""GELU (exact erf form) (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "GELU (exact erf form) (CPU size)",
    "level": 1,
    "description": (
        "Applies GELU in its exact form, y = x * 0.5 * (1 + erf(x / sqrt(2))), elementwise to a float32 "
        "matrix x of shape (1024, 4096). Output has the same shape. Purely memory-bound: one read and one "
        "write per element."
    ),
}

ROWS = 1024
COLS = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
