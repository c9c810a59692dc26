"""Linear layer, bias and ReLU (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Linear layer, bias and ReLU (CPU size)",
    "level": 2,
    "description": (
        "y = relu(x @ W^T + b) with nn.Linear(1024, 1024) (parameters linear.weight of shape (1024, 1024) and"
        " linear.bias) on a float32 x of shape (256, 1024). Output (256, 1024). Eager runs a GEMM with bias "
        "then a separate ReLU pass; TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 256
IN_FEATURES = 1024
OUT_FEATURES = 1024


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
