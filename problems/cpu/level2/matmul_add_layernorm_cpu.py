"""Linear layer, residual add and layer normalisation (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Linear layer, residual add and layer normalisation (CPU size)",
    "level": 2,
    "description": (
        "y = LayerNorm(x + linear(x)) with nn.Linear(512, 512) (linear.weight, linear.bias) and "
        "nn.LayerNorm(512, eps 1e-5) (norm.weight, norm.bias), a post-norm transformer sublayer. Input "
        "float32 (512, 512); output the same shape. TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

ROWS = 512
DIM = 512


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
