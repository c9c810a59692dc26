"""Convolution, batch norm (inference) and ReLU. Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "Convolution, batch norm (inference) and ReLU",
    "level": 2,
    "description": (
        "A 3x3 convolution without bias (conv.weight, 64 -> 128 channels, padding 1), then batch "
        "normalisation with the stored running statistics (bn.running_mean, bn.running_var, bn.weight, "
        "bn.bias, eps 1e-5, inference mode whatever the module's training flag), then ReLU. Input float32 "
        "NCHW (32, 64, 128, 128); output (32, 128, 128, 128)."
    ),
    "atol": 0.0003,
    "rtol": 0.0003,
}

BATCH = 64
C_IN = 64
C_OUT = 128
H = 128
W = 128


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=1e-5)
        # Running statistics as a trained network would have them, not the trivial 0 and 1.
        with torch.no_grad():
            self.bn.running_mean.copy_(0.2 * torch.randn(c_out))
            self.bn.running_var.copy_(0.5 + torch.rand(c_out))
            self.bn.weight.copy_(1 + 0.2 * torch.randn(c_out))
            self.bn.bias.copy_(0.2 * torch.randn(c_out))

    def forward(self, x):
        y = self.conv(x)
        # Inference-mode batch norm regardless of self.training, so the result does not depend on the batch.
        y = F.batch_norm(y, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias,
                         training=False, eps=self.bn.eps)
        return torch.relu(y)


def get_inputs():
    return [torch.randn(BATCH, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
