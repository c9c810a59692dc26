"""Max pooling, 3x3 window, stride 1 (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Max pooling, 3x3 window, stride 1 (CPU size)",
    "level": 1,
    "description": (
        "nn.MaxPool2d(kernel_size=3, stride=1, padding=1) on a float32 NCHW input of shape (4, 32, 64, 64); "
        "padding counts as minus infinity. Output has the same shape as the input."
    ),
}

BATCH = 4
C = 32
H = 64
W = 64


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
