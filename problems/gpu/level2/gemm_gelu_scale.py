"""Linear layer, tanh-GELU and scaling. Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "Linear layer, tanh-GELU and scaling",
    "level": 2,
    "description": (
        "y = scale * gelu_tanh(x @ W^T + b) with nn.Linear(4096, 4096) (linear.weight, linear.bias), the tanh"
        " approximation of GELU (F.gelu(..., approximate='tanh')) and a constant scale (1.5) given to the "
        "constructor. Input float32 (2048, 4096); output (2048, 4096)."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 2048
IN_FEATURES = 4096
OUT_FEATURES = 4096
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
