import torch
import torch.nn as nn

KERNELHUB = {
    "title": "LayerNorm over channels, channels-first",
    "level": 1,
    "description": "Layer normalisation over the channel axis of a (B, C, 1, S) activation, with a learned "
                   "scale and shift per channel: each of the S positions is normalised on its own.",
    "atol": 3e-2,
    "rtol": 3e-2,
}

batch, channels, seq = 1, 768, 1024
eps = 1e-5


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=1, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dim=1, keepdim=True)
        y = centered * torch.rsqrt(var + eps)
        return y * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


def get_inputs():
    return [torch.randn(batch, channels, 1, seq)]


def get_init_inputs():
    return [channels]
