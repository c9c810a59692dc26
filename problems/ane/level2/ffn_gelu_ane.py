import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Transformer feed-forward block, channels-first",
    "level": 2,
    "description": "A transformer's feed-forward block on a (B, C, 1, S) activation: 1x1 convolution "
                   "768 -> 3072, GELU (tanh approximation), 1x1 convolution 3072 -> 768, plus the residual.",
    "atol": 5e-2,
    "rtol": 5e-2,
}

batch, dim, hidden, seq = 1, 768, 3072, 256


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.up = nn.Conv2d(dim, hidden, kernel_size=1)
        self.down = nn.Conv2d(hidden, dim, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(x), approximate="tanh"))


def get_inputs():
    return [torch.randn(batch, dim, 1, seq)]


def get_init_inputs():
    return [dim, hidden]
