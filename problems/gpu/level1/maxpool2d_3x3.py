"""Max pooling, 3x3 window, stride 1. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Max pooling, 3x3 window, stride 1",
    "level": 1,
    "description": (
        "nn.MaxPool2d(kernel_size=3, stride=1, padding=1) on a float32 NCHW input of shape (64, 96, 224, "
        "224); padding counts as minus infinity. Output has the same shape as the input."
    ),
}

BATCH = 64
C = 96
H = 224
W = 224


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, H, W)]


def get_init_inputs():
    return []
