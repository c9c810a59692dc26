"""Row-wise log-sum-exp (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Row-wise log-sum-exp (CPU size)",
    "level": 1,
    "description": (
        "torch.logsumexp over the last dimension of a float32 matrix x of shape (1024, 4096), keeping the "
        "dimension: y[i, 0] = log(sum_j exp(x[i, j])), computed stably. Output shape (1024, 1). Eager PyTorch"
        " makes several passes over x; one pass is enough."
    ),
}

ROWS = 1024
COLS = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 4]


def get_init_inputs():
    return []
