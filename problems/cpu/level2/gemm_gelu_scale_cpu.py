"""Linear layer, tanh-GELU and scaling (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "Linear layer, tanh-GELU and scaling (CPU size)",
    "level": 2,
    "description": (
        "y = scale * gelu_tanh(x @ W^T + b) with nn.Linear(1024, 1024) (linear.weight, linear.bias), the tanh"
        " approximation of GELU (F.gelu(..., approximate='tanh')) and a constant scale (1.5) given to the "
        "constructor. Input float32 (256, 1024); output (256, 1024)."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 256
IN_FEATURES = 1024
OUT_FEATURES = 1024
SCALE = 1.5


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.gelu(self.linear(x), approximate="tanh") * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, SCALE]
