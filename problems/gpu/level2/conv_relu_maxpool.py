"""Convolution, ReLU and 2x2 max pooling. Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "Convolution, ReLU and 2x2 max pooling",
    "level": 2,
    "description": (
        "nn.Conv2d(64, 64, 3, padding=1) (conv.weight, conv.bias), ReLU, then nn.MaxPool2d(2) on a float32 "
        "NCHW input of shape (32, 64, 128, 128). Output (32, 64, H/2, W/2). TF32 off."
    ),
    "atol": 0.0003,
    "rtol": 0.0003,
}

BATCH = 96
C_IN = 64
C_OUT = 64
H = 128
W = 128


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1)

    def forward(self, x):
        return F.max_pool2d(torch.relu(self.conv(x)), 2)


def get_inputs():
    return [torch.randn(BATCH, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
