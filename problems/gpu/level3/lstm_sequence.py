"""LSTM over a sequence. Written for KernelHub."""

import torch
import torch.nn as nn

KERNELHUB = {
    "title": "LSTM over a sequence",
    "level": 3,
    "description": (
        "Runs nn.LSTMCell(512, 1024) (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh; gate order "
        "input, forget, cell, output) over a float32 sequence x of shape (32, 128, 512), starting from zero "
        "hidden and cell states, and returns every hidden state stacked: (32, 128, 1024). TF32 off."
    ),
    "atol": 0.0001,
    "rtol": 0.0001,
}

SEQ = 32
BATCH = 128
INPUT = 512
HIDDEN = 1024


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x):
        h = x.new_zeros(x.shape[1], self.hidden_size)
        c = x.new_zeros(x.shape[1], self.hidden_size)
        outputs = []
        for t in range(x.shape[0]):
            h, c = self.cell(x[t], (h, c))
            outputs.append(h)
        return torch.stack(outputs)


def get_inputs():
    return [torch.randn(SEQ, BATCH, INPUT)]


def get_init_inputs():
    return [INPUT, HIDDEN]
