"""Half-precision matrix multiplication. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Half-precision matrix multiplication",
    "level": 1,
    "description": (
        "C = A @ B for float16 matrices A of shape (8192, 8192) and B of shape (8192, 8192), output float16 "
        "of shape (8192, 8192). Inputs are scaled by K^-1/4 so entries of C are of order 1. Tensor cores "
        "welcome; accumulate in float32 to stay within the float16 tolerance."
    ),
    "atol": 0.02,
    "rtol": 0.02,
}

M = 8192
K = 8192
N = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    scale = K ** -0.25
    return [(torch.randn(M, K) * scale).half(), (torch.randn(K, N) * scale).half()]


def get_init_inputs():
    return []
