"""Small KernelBench-style trees written by the tests, and the pools they are offered on."""

from pathlib import Path

import pytest

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.{op}(x){extra}


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
'''

SOLUTION = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor x) {{ return x.clamp_min({variant}); }}
"""
ext = load_inline(name="gen_{variant}", cpp_sources=CPP, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
'''


def problem_source(op: str = "relu", extra: str = "") -> str:
    return PROBLEM.format(op=op, extra=extra)


def solution_source(variant: int = 0) -> str:
    return SOLUTION.format(variant=variant)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def kernelbench_tree(root: Path) -> Path:
    """A checkout's layout: root/KernelBench/level{1,2,3}/N_Name.py, plus files the importer must skip."""
    kb = root / "KernelBench"
    write(kb / "level1" / "19_ReLU.py", problem_source("relu"))
    write(kb / "level1" / "1_Square_matrix_multiplication_.py", problem_source("square"))
    write(kb / "level2" / "7_Conv3d_ReLU_LeakyReLU.py", problem_source("sigmoid"))
    write(kb / "level3" / "1_MLP.py", problem_source("tanh"))
    write(kb / "level1" / "README.py", problem_source("relu"))  # not N_Name.py: skipped
    write(kb / "level4" / "1_Hf_model.py", problem_source("relu"))  # level 4 is not imported
    return root


@pytest.fixture
def pools(db):
    from apps.devices.models import HardwarePool

    cpu = HardwarePool.objects.create(slug="cpu", name="CPU", kind="cpu", languages=["cpp"], device="cpu")
    h200 = HardwarePool.objects.create(slug="h200", name="H200", kind="gpu", device="cuda",
                                       languages=["cuda", "triton", "cupy", "cpp"])
    return {"cpu": cpu, "h200": h200}


@pytest.fixture
def suite(pools, tmp_path_factory):
    """The fixture tree imported (offered on h200, the only GPU pool), plus one bundled-style problem."""
    from io import StringIO

    from django.core.management import call_command

    from apps.submissions.problems import problem_load_from_file

    root = kernelbench_tree(tmp_path_factory.mktemp("kb"))
    call_command("import_kernelbench", str(root), stdout=StringIO(), stderr=StringIO())
    bundled = write(tmp_path_factory.mktemp("bundled") / "relu_scale_bias.py", problem_source("relu", " * 3"))
    problem_load_from_file(path=bundled, hardware=["h200"])
    return root


@pytest.fixture
def llm(db):
    from apps.submissions.services import entrant_create

    entrant, _ = entrant_create(name="Frontier LLM X", kind="llm", model_name="x-large")
    return entrant


@pytest.fixture
def published_world(suite, tmp_path_factory):
    """Three entrants with finished evaluations: one publishes its sources, one keeps them private, and one
    is private but submitted to a problem whose reveal date has passed."""
    from datetime import timedelta

    from django.utils import timezone

    from apps.submissions.models import Evaluation, Problem
    from apps.submissions.services import entrant_create, submission_create

    public, _ = entrant_create(name="Open Agent", kind="agent")
    public.sources_public = True
    public.save()
    private, _ = entrant_create(name="Closed LLM", kind="llm", model_name="closed-1", model_version="2026-11")
    Problem.objects.filter(slug="l3-1-mlp").update(reveal_at=timezone.now() - timedelta(days=1))
    Problem.objects.filter(slug="l2-7-conv3d-relu-leakyrelu").update(
        reveal_at=timezone.now() + timedelta(days=30))

    made = {}
    for key, entrant, slug, variant in [("public", public, "l1-19-relu", 1), ("private", private, "l1-19-relu", 2),
                                        ("revealed", private, "l3-1-mlp", 3),
                                        ("not_yet", private, "l2-7-conv3d-relu-leakyrelu", 4)]:
        submission, evaluation, _ = submission_create(entrant=entrant, problem_slug=slug,
                                                      source=solution_source(variant), hardware="h200")
        # What a runner would have reported (the runner protocol has its own tests).
        Evaluation.objects.filter(pk=evaluation.pk).update(
            status="done", stage="done", verdict="accepted" if variant % 2 else "compile_error",
            correct=bool(variant % 2), runtime_us=10.0 * variant if variant % 2 else None, eager_us=100.0,
            compile_us=80.0, speedup_vs_eager=10.0 / variant if variant % 2 else None,
            message=f"error: clamp_min({variant}) quoted from the source" if variant % 2 == 0 else "",
            result={"verdict": "accepted", "stats": {"n": 50, "std_us": 0.1}, "solution_hash": f"hash{variant}",
                    "log": f"clamp_min({variant}) in a build log"},
            system_info={"device_name": "NVIDIA H200"}, finished_at=timezone.now(),
        )
        made[key] = submission
    return made
