import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Pointwise convolution and ReLU, channels-first",
    "level": 1,
    "description": "A 1x1 convolution mixing 512 channels into 1024, then ReLU, on a (B, C, 1, S) "
                   "activation: the Neural Engine's native layout for a linear layer over a sequence.",
    "atol": 2e-2,
    "rtol": 2e-2,
}

batch, c_in, c_out, seq = 1, 512, 1024, 512


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.proj = nn.Conv2d(c_in, c_out, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


def get_inputs():
    return [torch.randn(batch, c_in, 1, seq)]


def get_init_inputs():
    return [c_in, c_out]
