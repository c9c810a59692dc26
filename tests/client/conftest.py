"""A live site for the client: a pool, a problem, an entrant with its token, and a runner identity."""

import pytest

from tests.client.runner_stand_in import purge
from tests.live import live_asgi_process, live_asgi_server  # noqa: F401

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
'''

SOLUTION = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor run(torch::Tensor x) {{ return x.clamp_min({variant}); }}"
ext = load_inline(name="relu_{variant}", cpp_sources=CPP, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
'''


def solution(variant: int) -> str:
    return SOLUTION.format(variant=variant)


@pytest.fixture
def site(live_asgi_server, tmp_path):  # noqa: F811 - the fixture imported above
    from apps.devices.models import HardwarePool
    from apps.devices.services import runner_create
    from apps.submissions.services import entrant_create, problem_load_from_file

    pool = HardwarePool.objects.create(slug="cpu", name="CPU", kind="cpu", languages=["cpp"], device="cpu")
    problem_file = tmp_path / "level1" / "relu_client.py"
    problem_file.parent.mkdir()
    problem_file.write_text(PROBLEM)
    problem, _ = problem_load_from_file(path=problem_file, hardware=["cpu"])
    entrant, token = entrant_create(name="Client Agent", kind="agent")
    _, runner_secret = runner_create(name="test-runner", pool=pool)
    purge("pool.cpu")
    return {"url": live_asgi_server, "token": token, "problem": problem.slug, "entrant": entrant,
            "runner_secret": runner_secret}
