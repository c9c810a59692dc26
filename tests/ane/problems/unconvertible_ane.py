import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.bessel_j0(x)  # no coremltools converter for this op


def get_inputs():
    return [torch.randn(1, 64, 1, 64)]


def get_init_inputs():
    return []
