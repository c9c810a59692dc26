"""Build slots (gpu_runner/prebuild.py): a solution's extensions are built into the host's cache by a child that has
no GPU, before its evaluation, which then finds them built. A solution the evaluation would refuse is refused here
too, before anything is built; a failed build is cached with its message, so the evaluation answers at once."""

import uuid
from pathlib import Path

import pytest

from gpu_runner import evaluate, prebuild
from gpu_runner.config import RunnerConfig
from gpu_runner.worker import prebuild_job
from tests.evaluator.helpers import PROBLEM


def _solution(body: str = "out[i] = in[i] > 0.f ? in[i] * s : 0.f;", prelude: str = "") -> str:
    """A C++ solution of relu_scale.py whose source is unique to this test (its build key is new)."""
    tag = uuid.uuid4().hex
    return f'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
{prelude}
CPP = r"""
// {tag}
torch::Tensor relu_scale(torch::Tensor x, double scale) {{
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x must be contiguous float32");
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    const float s = static_cast<float>(scale);
    for (int64_t i = 0; i < x.numel(); ++i) {{ {body} }}
    return y;
}}
"""
ext = load_inline(name="ahead_{tag[:12]}", cpp_sources=CPP, functions=["relu_scale"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return ext.relu_scale(x, self.scale)
'''


def test_an_extension_built_ahead_is_found_built_by_the_evaluation():
    source = _solution()
    ahead = prebuild.build_ahead(PROBLEM, source, device="cpu")
    assert ahead["outcome"] == "built", ahead
    [made] = ahead["builds"]
    assert made["ok"] and not made["cached"]
    assert ahead["isolation_gpu"].startswith("none")
    result = evaluate.evaluate(PROBLEM, source, device="cpu", seed=3)
    assert result["verdict"] == "accepted", result["message"]
    [found] = result["checks"]["builds"]
    assert found["cached"] and found["key"] == made["key"]


def test_a_solution_the_prescreen_refuses_is_not_built():
    source = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
              "    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n\n"
              "    def forward(self, x):\n        return torch.relu(x) * self.scale\n")
    ahead = prebuild.build_ahead(PROBLEM, source, device="cpu")
    assert ahead["outcome"] == "verdict" and ahead["verdict"] == "rejected", ahead
    assert ahead["builds"] == []


def test_a_failed_build_is_cached_with_its_message_for_the_evaluation():
    source = _solution(body="out[i] = undeclared_name;")
    job = {"evaluation_id": 7, "problem_source": PROBLEM, "solution_source": source, "device": "cpu"}
    assert prebuild_job(job) == "verdict"  # the Celery task, run in this process
    result = evaluate.evaluate(PROBLEM, source, device="cpu", seed=3)
    assert result["verdict"] == "compile_error"
    assert "undeclared_name" in result["message"]
    [found] = result["checks"]["builds"]
    assert found["cached"] and not found["ok"]


def test_a_build_hint_without_its_sources_is_ignored():
    assert prebuild_job({"evaluation_id": 1, "device": "cuda"}) == "ignored"


def test_build_slots_come_from_the_settings():
    def slots(value: str) -> int:
        return RunnerConfig.from_env({"KERNELHUB_BUILD_SLOTS": value}).build_slot_count()

    assert slots("3") == 3
    assert slots("0") == 0
    with pytest.raises(ValueError, match="KERNELHUB_BUILD_SLOTS='many'"):
        slots("many")
    assert slots("") >= 1  # unset: half the cores, at least one


# The build slot's child, probed directly (no pre-screen in the way): it asks for the GPU back before CUDA starts.
PROBE = """
import json, os, socket, sys
from gpu_runner.protocol import Channel

channel = Channel(socket.socket(fileno=int(sys.argv[-1])))
report = {"visible_at_start": os.environ.get("CUDA_VISIBLE_DEVICES")}
if os.environ.get("KERNELHUB_LOCKDOWN"):
    from gpu_runner.sandbox import lockdown
    report["lockdown"] = lockdown(os.environ["KERNELHUB_LOCKDOWN"])
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
import torch
report["cuda"] = torch.cuda.is_available()
import stat
nodes = ["/dev/" + n for n in os.listdir("/dev") if n.startswith("nvidia")]
report["nodes"] = {p: os.stat(p).st_rdev for p in nodes if stat.S_ISCHR(os.stat(p).st_mode)}
channel.send(report)
"""


def _probe(gpu: bool) -> dict:
    from gpu_runner import sandbox

    child = sandbox.spawn(["-c", PROBE], workdir=sandbox.new_workdir("probe-"),
                          limits=sandbox.Limits(wall_s=120, cpu_s=120, memory_bytes=None, gpu=gpu))
    try:
        import time

        return child.channel.recv(deadline=time.monotonic() + 120)
    finally:
        sandbox.kill(child)


def test_a_child_without_gpu_starts_with_no_visible_device():
    report = _probe(gpu=False)
    assert report["visible_at_start"] == ""
    assert report["cuda"] is False


@pytest.mark.cuda
def test_a_child_without_gpu_cannot_reach_it_even_when_it_asks():
    import os

    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    with_gpu = _probe(gpu=True)
    assert with_gpu["cuda"] is True  # the same probe, the GPU lent: the test can tell the two apart
    report = _probe(gpu=False)
    assert report["cuda"] is False, report
    assert report["lockdown"]["gpu"].startswith("hidden:"), report["lockdown"]
    null = os.stat("/dev/null").st_rdev
    assert report["nodes"] and all(rdev == null for rdev in report["nodes"].values()), report["nodes"]


@pytest.mark.cuda
def test_a_cuda_extension_is_built_ahead_without_a_gpu():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    source = (Path(__file__).parent / "fixtures" / "relu_scale_cuda.py").read_text().replace(
        "__global__", f"// {uuid.uuid4().hex}\n__global__", 1)
    ahead = prebuild.build_ahead(PROBLEM, source, device="cuda")
    assert ahead["outcome"] == "built", ahead
    assert ahead["builds"] and all(b["ok"] and not b["cached"] for b in ahead["builds"])
    result = evaluate.evaluate(PROBLEM, source, device="cuda", seed=5)
    assert result["verdict"] == "accepted", result["message"]
    assert all(b["cached"] for b in result["checks"]["builds"])
