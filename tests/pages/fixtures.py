"""Named actors and data for the page and browser tests (healthchecks' habit): alice owns the entrant
`alice-agent` and its submission, bob is another signed-up user, sam is staff. Import the fixtures into a
conftest.py to use them."""

from __future__ import annotations

import pytest

REFERENCE = '''import torch
import torch.nn as nn

KERNELHUB = {"title": "ReLU and scale", "level": 1, "description": "y = relu(x) * scale"}


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, bias):
        return torch.relu(x) * self.scale + bias


def get_inputs():
    return [torch.randn(1024), torch.randn(1024)]


def get_init_inputs():
    return [2.0]
'''

SOLUTION = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SECRET_MARKER = "alice-private-kernel-trick"

module = load_inline(name="relu_scale", cpp_sources="...", functions=["forward"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, bias):
        return module.forward(x, bias, self.scale)
'''


@pytest.fixture
def cpu_pool(db):
    from apps.devices.models import HardwarePool

    return HardwarePool.objects.create(slug="cpu", name="CPU (2 cores)", kind="cpu", languages=["cpp"], device="cpu")


@pytest.fixture
def gpu_pool(db):
    from apps.devices.models import HardwarePool

    return HardwarePool.objects.create(
        slug="h200", name="NVIDIA H200", kind="gpu", languages=["cuda", "triton", "cupy"], device="cuda"
    )


@pytest.fixture
def problem(cpu_pool):
    from apps.submissions.models import Problem, sha256_text

    p = Problem.objects.create(
        slug="relu-scale", title="ReLU and scale", level=1, description="y = relu(x) * scale",
        source=REFERENCE, content_hash=sha256_text(REFERENCE),
    )
    p.pools.add(cpu_pool)
    return p


@pytest.fixture
def alice(db, django_user_model):
    return django_user_model.objects.create_user(username="alice", password="alice-password-1")


@pytest.fixture
def bob(db, django_user_model):
    return django_user_model.objects.create_user(username="bob", password="bob-password-1")


@pytest.fixture
def sam(db, django_user_model):
    return django_user_model.objects.create_user(username="sam", password="sam-password-1", is_staff=True)


@pytest.fixture
def alice_agent(alice):
    from apps.submissions import services

    entrant, _token = services.entrant_create(name="alice-agent", kind="agent", owner=alice, model_name="AgentX")
    return entrant


@pytest.fixture
def alice_submission(alice_agent, problem):
    """alice's submission with its (queued) evaluation; nothing is dispatched inside a test transaction."""
    from apps.submissions import services

    submission, _evaluation, _created = services.submission_create(
        entrant=alice_agent, problem_slug=problem.slug, source=SOLUTION, language="cpp", hardware="cpu"
    )
    return submission
