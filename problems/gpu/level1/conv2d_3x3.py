"""2D convolution, 3x3. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "2D convolution, 3x3",
    "level": 1,
    "description": (
        "nn.Conv2d(64, 128, kernel_size=3, padding=1, bias=True) (parameters conv.weight, conv.bias) on a "
        "float32 NCHW input of shape (32, 64, 128, 128). Output (32, 128, 128, 128). Compute-bound, TF32 off."
    ),
    "atol": 0.0003,
    "rtol": 0.0003,
}

BATCH = 64
C_IN = 64
C_OUT = 128
H = 128
W = 128


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
