"""A problem with 2 GiB tensors on the CPU track, within a 24 GiB machine's memory (issue 13), and one that cannot
fit, refused at once with the figures. Through the command line, as a runner host runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluator.helpers import FIXTURES

LARGE = FIXTURES / "relu_large.py"
HONEST_FILE = FIXTURES / "relu_scale_cpp.py"
ROOT = Path(__file__).resolve().parents[2]


def _evaluate(tmp_path: Path, problem: Path = LARGE, **env: str) -> tuple[dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(problem), "--solution", str(HONEST_FILE),
         "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=2400,
        env={**os.environ, "KERNELHUB_WORK_DIR": str(tmp_path / "work"), **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(2700)  # 2 GiB drawn and moved some 40 times, and both baselines, on 2 cores
def test_it_accepts_an_honest_solution_over_a_2_gib_input(tmp_path):
    # Few timed calls: this is about memory, not the precision of the time. With the settings as they ship: the
    # solution's child needs 9.8 GiB of address space by the plan (a set, a set a kept output holds on to, two
    # outputs), over the 8 GiB a child had before the plan set its limit; the plan sets it at its load.
    result, stderr = _evaluate(tmp_path, KERNELHUB_MAX_REPS="8", KERNELHUB_TIMING_BUDGET_S="1",
                               KERNELHUB_CHILD_MEMORY_GB="")
    assert result["verdict"] == "accepted", result["message"]
    # The plan set it before the solution ran, and it covers what the measured footprint needs: from the cached
    # footprint where an earlier evaluation on this machine measured it; else from the first trial's measured one,
    # or from the shapes' plan where that one needs more (with the host's memory freer before the trials it may
    # keep more outputs: 2026-12-07, 3 against 2). Never below 1.5 times the measured need, whichever it came from.
    limit = result["checks"]["memory_plan"]["solution_address_space"]
    assert limit["from"] in ("measured", "cached", "meta"), limit
    assert limit["solution_child_needs"] > 8 * (1 << 30) and limit["bytes"] == int(1.5 * limit["solution_child_needs"])
    if limit["from"] != "cached":
        assert limit["measured_needs"] > 8 * (1 << 30), limit
        assert limit["bytes"] >= int(1.5 * limit["measured_needs"]), limit
    # What the parent read in /proc/<pid>/limits after the load: the figure the plan set, not the ceiling it started at.
    assert result["isolation"]["observed"]["address_space_bytes"] == limit["bytes"], result["isolation"]
    assert result["isolation"]["rlimits"]["address_space_bytes"] == limit["bytes"]
    assert result["isolation"]["rlimits"]["address_space_at_start_bytes"] > limit["bytes"]
    assert result["checks"]["input_bytes"] == 8192 * 65536 * 4
    plan = result["checks"]["memory_plan"]["timing"]
    assert plan["fits"] and plan["n_sets"] == 1 and plan["expected"] == "on_demand", plan
    assert plan["keep_outputs"] >= 2
    assert result["checks"]["timing_input_sets"] == 1
    # Each trial's expected outputs computed once: trial 0's are kept for the solution's first trial (on demand the
    # others are computed when their turn comes), and one more run for the determinism check.
    trials = result["checks"]["trials"]
    assert result["op_seconds"]["eager"]["trial"][0] == trials + 1, result["op_seconds"]["eager"]


def test_it_refuses_a_problem_larger_than_the_host_memory_in_seconds(tmp_path):
    result, _ = _evaluate(tmp_path, KERNELHUB_HOST_MEMORY_GB="3")
    # Seconds (22 s with the 2-core machine's load average at 13): the reference's start and the footprint.
    assert result["wall_s"] < 90
    assert result["verdict"] == "runtime_error"
    message = result["message"]
    assert "does not fit" in message and "GiB of host memory" in message and "3.0 GiB is free" in message, message
    assert "inputs 2.0 GiB" in message, message
    before = result["checks"]["memory_plan"]["before_trials"]
    assert before["fits"] is False and before["footprint"]["source"] in ("meta", "cached")
    # Refused before any trial: no input of 2 GiB was made.
    assert "trials" not in result["stage_seconds"]


def test_it_refuses_a_problem_over_the_childrens_memory_limit(tmp_path):
    result, _ = _evaluate(tmp_path, KERNELHUB_CHILD_MEMORY_GB="3")
    assert result["verdict"] == "runtime_error"
    assert "over its limit of 3.0 GiB (KERNELHUB_CHILD_MEMORY_GB)" in result["message"], result["message"]


# 2 GiB of buffers on a small input: every child holds its own copy of the Model's parameters and buffers.
LARGE_BUFFERS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.zeros(512, 1024, 1024))

    def forward(self, x):
        return x + self.table[0, 0, : x.shape[-1]]


def get_inputs():
    return [torch.rand(16, 1024)]


def get_init_inputs():
    return []
'''


def test_it_counts_the_models_parameters_in_each_child(tmp_path):
    problem = tmp_path / "buffers.py"
    problem.write_text(LARGE_BUFFERS)
    result, _ = _evaluate(tmp_path, problem, KERNELHUB_CHILD_MEMORY_GB="3")
    # The solution's child would need its 2 GiB copy beside the process itself: over 3 GiB, refused before any
    # trial, with the parameters named.
    assert result["verdict"] == "runtime_error", result["message"]
    message = result["message"]
    assert "the solution's process needs" in message and "over its limit of 3.0 GiB" in message, message
    assert "parameters 2.0 GiB in each process" in message, message
    assert result["checks"]["memory_plan"]["before_trials"]["footprint"]["param_bytes"] == 2 << 30
    assert "trials" not in result["stage_seconds"]


# One weight used by two layers: the load counts it once.
TIED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(1024, 1024, bias=False)
        self.b = nn.Linear(1024, 1024, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.rand(4, 1024)]


def get_init_inputs():
    return []
'''


def test_a_shared_parameter_is_counted_once(tmp_path):
    problem = tmp_path / "tied.py"
    problem.write_text(TIED)
    result, _ = _evaluate(tmp_path, problem)
    # Loaded and judged (this solution solves another problem), not an evaluator error at the load.
    assert result["verdict"] in ("wrong_answer", "runtime_error", "compile_error"), result["message"]
    assert "reference" not in result["message"], result["message"]
    assert result["checks"]["memory_plan"]["before_trials"]["footprint"]["param_bytes"] == 1024 * 1024 * 4
