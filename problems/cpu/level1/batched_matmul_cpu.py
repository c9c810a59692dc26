"""Batched matrix multiplication (float32) (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Batched matrix multiplication (float32) (CPU size)",
    "level": 1,
    "description": (
        "torch.bmm of float32 A of shape (16, 128, 256) and B of shape (16, 256, 128), giving C of shape (16,"
        " 128, 128). Inputs are scaled by K^-1/4 so entries of C are of order 1. Compute-bound, with TF32 "
        "off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 16
M = 128
K = 256
N = 128


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
