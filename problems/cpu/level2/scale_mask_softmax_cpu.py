"""Scaled, causally masked softmax (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Scaled, causally masked softmax (CPU size)",
    "level": 2,
    "description": (
        "Attention-score post-processing: y = softmax(masked(scores * scale)) over the last dimension, where "
        "masked sets positions j > i (the future) to minus infinity. scores is float32 of shape (4, 8, 256, "
        "256); scale = 0.125, given to the constructor. Output has the same shape; masked positions are "
        "exactly 0."
    ),
}

BATCH = 4
HEADS = 8
SEQ = 256
SCALE = 0.125


class Model(nn.Module):
    def __init__(self, seq, scale):
        super().__init__()
        self.scale = scale
        # Built once; not a parameter, so it is not part of the state dict.
        self.register_buffer("future", torch.ones(seq, seq, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, scores):
        s = (scores * self.scale).masked_fill(self.future, float("-inf"))
        return torch.softmax(s, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, SEQ) * 4]


def get_init_inputs():
    return [SEQ, SCALE]
