"""The feed-forward block as a ModelNew that KernelHub converts with ct.convert (fp16, fp16 inputs).

Same parameters as the reference (so its state_dict loads strictly); the GELU is written out so that the
converted graph uses tanh and mul/add ops that the Neural Engine runs.
"""

import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.up = nn.Conv2d(dim, hidden, kernel_size=1)
        self.down = nn.Conv2d(hidden, dim, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x)
        g = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h * h * h)))
        return x + self.down(g)
