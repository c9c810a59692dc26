"""z = alpha * x + beta * y, then out = z * sigmoid(z) + shift: an axpby followed by a fused elementwise step.

The problem of the example CUDA Agent workdirs (examples/workdirs/); each workdir carries it as model.py.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float, beta: float, shift: float) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta
        self.shift = shift

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = self.alpha * x + self.beta * y
        return z * torch.sigmoid(z) + self.shift


N = 1 << 16


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return [1.5, -0.75, 0.25]
