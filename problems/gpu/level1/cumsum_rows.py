"""Inclusive prefix sum along rows. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Inclusive prefix sum along rows",
    "level": 1,
    "description": (
        "Inclusive scan (torch.cumsum) along the last dimension of a float32 matrix x of shape (32768, 8192):"
        " y[i, j] = sum_(k <= j) x[i, k]. Output has the same shape. Inputs are uniform in [-1, 1) so the "
        "sums stay small and float32 rounding differences between summation orders stay within tolerance."
    ),
    "atol": 0.001,
    "rtol": 0.0001,
}

ROWS = 32768
COLS = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.rand(ROWS, COLS) * 2 - 1]


def get_init_inputs():
    return []
