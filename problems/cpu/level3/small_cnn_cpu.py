"""Small image classifier CNN (CPU size). Written for KernelHub."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KERNELHUB = {
    "title": "Small image classifier CNN (CPU size)",
    "level": 3,
    "description": (
        "A three-stage CNN classifier: conv 3->32, ReLU, 2x2 max pool; conv 32->64, ReLU, 2x2 max pool; conv "
        "64->128, ReLU (all 3x3, padding 1, with bias: conv1.*, conv2.*, conv3.*); global average pool; "
        "nn.Linear(128, 10) (fc.*). Input float32 NCHW (8, 3, 64, 64); output logits (8, 10). TF32 off."
    ),
    "atol": 0.0003,
    "rtol": 0.0003,
}

BATCH = 8
H = 64
W = 64
CLASSES = 10


class Model(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv3 = nn.Conv2d(64, 128, 3, padding=1)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.conv3(x))
        return self.fc(x.mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(BATCH, 3, H, W)]


def get_init_inputs():
    return [CLASSES]
