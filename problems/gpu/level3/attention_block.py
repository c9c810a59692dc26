"""Causal multi-head self-attention block. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "Causal multi-head self-attention block",
    "level": 3,
    "description": (
        "Multi-head causal self-attention without dropout: qkv = nn.Linear(512, 3*512) (qkv.weight, qkv.bias)"
        " splits into 8 heads of size 512/8; softmax(q k^T / sqrt(head_dim)) with future positions masked; "
        "the heads are concatenated and projected by nn.Linear(512, 512) (proj.weight, proj.bias). Input "
        "float32 (16, 1024, 512); output the same shape. TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

BATCH = 16
SEQ = 1024
DIM = 512
HEADS = 8


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        # (b, t, d) -> (b, heads, t, head_dim)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
