"""2D convolution, 3x3 (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "2D convolution, 3x3 (CPU size)",
    "level": 1,
    "description": (
        "nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=True) (parameters conv.weight, conv.bias) on a "
        "float32 NCHW input of shape (4, 16, 64, 64). Output (4, 32, 64, 64). Compute-bound, TF32 off."
    ),
    "atol": 0.0003,
    "rtol": 0.0003,
}

BATCH = 4
C_IN = 16
C_OUT = 32
H = 64
W = 64


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
