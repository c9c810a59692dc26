"""Linear layer, bias and ReLU. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Linear layer, bias and ReLU",
    "level": 2,
    "description": (
        "y = relu(x @ W^T + b) with nn.Linear(4096, 4096) (parameters linear.weight of shape (4096, 4096) and"
        " linear.bias) on a float32 x of shape (2048, 4096). Output (2048, 4096). Eager runs a GEMM with bias"
        " then a separate ReLU pass; TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 2048
IN_FEATURES = 4096
OUT_FEATURES = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
