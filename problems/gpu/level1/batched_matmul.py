"""Batched matrix multiplication (float32). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Batched matrix multiplication (float32)",
    "level": 1,
    "description": (
        "torch.bmm of float32 A of shape (128, 512, 1024) and B of shape (128, 1024, 512), giving C of shape "
        "(128, 512, 512). Inputs are scaled by K^-1/4 so entries of C are of order 1. Compute-bound, with "
        "TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 128
M = 512
K = 1024
N = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    scale = K ** -0.25
    return [torch.randn(BATCH, M, K) * scale, torch.randn(BATCH, K, N) * scale]


def get_init_inputs():
    return []
