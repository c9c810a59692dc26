"""What the sandbox keeps from a solution, tried from the solution's import (where the guards allow files)."""

import os
from pathlib import Path

import pytest

from gpu_runner import sandbox
from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward

PRELUDE = """
from pathlib import Path

# A runner secret must not be visible (read the way native code would, past the Python-level checks).
if b"KERNELHUB_TEST_RUNNER_SECRET" in Path("/proc/self/environ").read_bytes():
    raise RuntimeError("the runner's environment leaked into the sandbox")
# Writes outside the child's directory: the build cache, and /tmp (a later evaluation would read it).
cache = Path.home().parent.parent
for target in (cache / "builds" / "planted-by-solution", Path("/tmp/kernelhub-planted-by-solution")):
    try:
        target.write_text("x")
    except OSError:
        pass
"""


def test_it_keeps_the_environment_and_the_filesystem_from_the_solution(monkeypatch):
    if not sandbox.unshare_works():
        pytest.skip("unshare is not permitted here: no namespaces, so no filesystem isolation to test")
    monkeypatch.setenv("KERNELHUB_TEST_RUNNER_SECRET", "hunter2")
    monkeypatch.setenv("KERNELHUB_WORK_DIR", str(sandbox.cache_dir() / "work"))
    solution = with_forward("return ext.relu_scale(x.contiguous(), self.scale)", prelude=PRELUDE)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    assert not (sandbox.cache_dir() / "builds" / "planted-by-solution").exists()
    assert not Path("/tmp/kernelhub-planted-by-solution").exists()
    observed = result["isolation"]["observed"]
    assert observed["own_net_namespace"] and observed["own_pid_namespace"] and observed["root_read_only"]
    assert observed["capabilities_dropped"]
    assert "KERNELHUB_TEST_RUNNER_SECRET" not in result["isolation"]["env"]
    assert os.environ["KERNELHUB_TEST_RUNNER_SECRET"] == "hunter2"
