"""ResNet basic block (inference). Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "ResNet basic block (inference)",
    "level": 3,
    "description": (
        "The basic residual block of ResNet-18/34 at inference: relu(x + bn2(conv2(relu(bn1(conv1(x)))))), "
        "with 3x3 convolutions of 128 channels, padding 1, no bias (conv1.weight, conv2.weight), and batch "
        "norms using their running statistics (bn1.*, bn2.*, eps 1e-5). Input float32 NCHW (32, 128, 56, 56);"
        " output the same shape. TF32 off."
    ),
    "atol": 0.0003,
    "rtol": 0.0003,
}

BATCH = 128
CHANNELS = 128
H = 56
W = 56


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.running_mean.copy_(0.2 * torch.randn(channels))
                bn.running_var.copy_(0.5 + torch.rand(channels))
                bn.weight.copy_(1 + 0.2 * torch.randn(channels))
                bn.bias.copy_(0.2 * torch.randn(channels))

    @staticmethod
    def _bn(bn, y):
        # Inference-mode batch norm regardless of self.training.
        return F.batch_norm(y, bn.running_mean, bn.running_var, bn.weight, bn.bias, training=False, eps=bn.eps)

    def forward(self, x):
        y = torch.relu(self._bn(self.bn1, self.conv1(x)))
        y = self._bn(self.bn2, self.conv2(y))
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, H, W)]


def get_init_inputs():
    return [CHANNELS]
