"""Residual add and layer normalisation. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Residual add and layer normalisation",
    "level": 2,
    "description": (
        "y = LayerNorm(x + residual) over the last dimension (size 8192, eps 1e-5, parameters norm.weight, "
        "norm.bias) for float32 x and residual of shape (24576, 8192). Output has the same shape. Eager "
        "writes the sum to memory and reads it back; a fused kernel reads each input once."
    ),
}

ROWS = 24576
DIM = 8192


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.copy_(1 + 0.5 * torch.randn(dim))
            self.norm.bias.copy_(0.5 * torch.randn(dim))

    def forward(self, x, residual):
        return self.norm(x + residual)


def get_inputs():
    return [torch.randn(ROWS, DIM), torch.randn(ROWS, DIM)]


def get_init_inputs():
    return [DIM]
