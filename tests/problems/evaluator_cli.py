"""Runs the evaluator's command line on one bundled problem and example, as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .suite import REPO_ROOT


def evaluate_cli(problem: Path, solution: Path, *, device: str, timeout: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "gpu_runner",
        "evaluate",
        "--problem",
        str(problem),
        "--solution",
        str(solution),
        "--device",
        device,
        "--json",
    ]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstderr:\n{proc.stderr[-4000:]}"
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one JSON line on stdout, got:\n{proc.stdout[-4000:]}"
    return json.loads(lines[0])


def assert_accepted(result: dict) -> None:
    assert result["verdict"] == "accepted", f"{result['verdict']}: {result.get('message')}"
    assert result["correct"] is True
    assert result["runtime_us"] > 0 and result["eager_us"] > 0
    assert result["speedup_vs_eager"] > 0
