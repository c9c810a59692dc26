"""Linear layer, residual add and layer normalisation. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Linear layer, residual add and layer normalisation",
    "level": 2,
    "description": (
        "y = LayerNorm(x + linear(x)) with nn.Linear(2048, 2048) (linear.weight, linear.bias) and "
        "nn.LayerNorm(2048, eps 1e-5) (norm.weight, norm.bias), a post-norm transformer sublayer. Input "
        "float32 (8192, 2048); output the same shape. TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

ROWS = 8192
DIM = 2048


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.copy_(1 + 0.5 * torch.randn(dim))
            self.norm.bias.copy_(0.5 * torch.randn(dim))

    def forward(self, x):
        return self.norm(x + self.linear(x))


def get_inputs():
    return [torch.randn(ROWS, DIM)]


def get_init_inputs():
    return [DIM]
