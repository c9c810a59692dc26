"""Row-wise softmax (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Row-wise softmax (CPU size)",
    "level": 1,
    "description": (
        "Softmax over the last dimension of a float32 matrix x of shape (1024, 4096): y[i, j] = exp(x[i, j] -"
        " max_k x[i, k]) / sum_k exp(x[i, k] - max_k x[i, k]). Output has the same shape."
    ),
}

ROWS = 1024
COLS = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 3]


def get_init_inputs():
    return []
