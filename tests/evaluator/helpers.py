"""Fixture sources shared by the evaluator tests."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBLEM = (FIXTURES / "relu_scale.py").read_text()
TINY_PROBLEM = (FIXTURES / "relu_tiny_scale.py").read_text()
HONEST = (FIXTURES / "relu_scale_cpp.py").read_text()


def with_forward(body: str, prelude: str = "", base: str = HONEST) -> str:
    """The honest solution with ModelNew redefined: same extension, so the build is shared and cached."""
    return (
        base
        + "\n"
        + textwrap.dedent(prelude)
        + "\n\nclass ModelNew(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n"
        + "        self.scale = scale\n\n    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(body).strip(), "        ")
        + "\n"
    )


def processes_with(text: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if text in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            pass
    return found


REPO_ROOT = Path(__file__).resolve().parents[2]


def evaluations_at_once(tmp_path: Path, solution: str, *, device: str | None = None, n: int = 2,
                        env: dict[str, str] | None = None, stagger_s: float = 0.0,
                        timeout: float = 900) -> list[dict[str, Any]]:
    """n command-line evaluations of PROBLEM with `solution`, started together (stagger_s apart), each exiting 0:
    their results, in the order started."""
    (tmp_path / "problem.py").write_text(PROBLEM)
    (tmp_path / "solution.py").write_text(solution)
    cmd = [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(tmp_path / "problem.py"),
           "--solution", str(tmp_path / "solution.py"), "--json"] + (["--device", device] if device else [])
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    procs = []
    for _ in range(n):
        procs.append(subprocess.Popen(cmd, cwd=REPO_ROOT, env=full_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        time.sleep(stagger_s)
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out))
    return results


def assert_no_timed_overlap(first: dict[str, Any], second: dict[str, Any]) -> None:
    """No hold of the device lock of one evaluation overlaps an exclusive (timed) hold of the other."""
    for a in first["checks"]["device_lock"]:
        for b in second["checks"]["device_lock"]:
            if a["shared"] and b["shared"]:
                continue
            assert a["held_until"] <= b["held_from"] or b["held_until"] <= a["held_from"], (a, b)
