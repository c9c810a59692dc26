"""Square matrix multiplication (float32). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Square matrix multiplication (float32)",
    "level": 1,
    "description": (
        "C = A @ B for float32 square matrices A and B of shape (4096, 4096). Inputs are scaled by N^-1/4 so "
        "entries of C are of order 1. Output shape (4096, 4096). Compute-bound: 2 * N^3 floating-point "
        "operations; the reference runs with TF32 off, so the solution must keep full float32 precision."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    scale = N ** -0.25
    return [torch.randn(N, N) * scale, torch.randn(N, N) * scale]


def get_init_inputs():
    return []
