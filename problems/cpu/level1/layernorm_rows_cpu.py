"""Layer normalisation of rows (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Layer normalisation of rows (CPU size)",
    "level": 1,
    "description": (
        "nn.LayerNorm over the last dimension (size 2048, eps 1e-5, learned weight and bias named norm.weight"
        " and norm.bias) of a float32 matrix x of shape (2048, 2048). Biased variance, as PyTorch computes "
        "it. Output has the same shape."
    ),
}

ROWS = 2048
DIM = 2048


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        # Non-trivial affine parameters, so a solution that ignores them fails.
        with torch.no_grad():
            self.norm.weight.copy_(1 + 0.5 * torch.randn(dim))
            self.norm.bias.copy_(0.5 * torch.randn(dim))

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(ROWS, DIM) * 2 + 1]


def get_init_inputs():
    return [DIM]
