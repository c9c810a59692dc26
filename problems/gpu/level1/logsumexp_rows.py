"""Row-wise log-sum-exp. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Row-wise log-sum-exp",
    "level": 1,
    "description": (
        "torch.logsumexp over the last dimension of a float32 matrix x of shape (8192, 32768), keeping the "
        "dimension: y[i, 0] = log(sum_j exp(x[i, j])), computed stably. Output shape (8192, 1). Eager PyTorch"
        " makes several passes over x; one pass is enough."
    ),
}

ROWS = 8192
COLS = 32768


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 4]


def get_init_inputs():
    return []
