"""Attention core: QK^T, softmax, times V. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Attention core: QK^T, softmax, times V",
    "level": 2,
    "description": (
        "softmax(q @ k^T * d^-1/2) @ v for float32 q, k, v of shape (8, 16, 1024, 64), no mask. Output (8, "
        "16, 1024, 64). Eager materialises the 1024 x 1024 score matrix per head; a fused (flash-style) "
        "kernel need not. TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 8
HEADS = 16
SEQ = 1024
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
