import json
import subprocess
import sys
import time

from tests.evaluator.helpers import FIXTURES


def _evaluate_in_new_process() -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(FIXTURES / "relu_scale.py"),
         "--solution", str(FIXTURES / "relu_scale_cpp.py"), "--json"],
        capture_output=True, text=True, timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_it_builds_an_extension_once_across_processes():
    _evaluate_in_new_process()  # builds, unless an earlier test of this session already did
    start = time.monotonic()
    second = _evaluate_in_new_process()
    builds = second["checks"]["builds"]
    assert builds and all(b["cached"] and b["ok"] for b in builds)
    assert max(b["seconds"] for b in builds) < 2
    # Until the build, an evaluation takes seconds: the extension is not compiled again.
    assert second["checks"]["stage_started_s"]["checking"] < 60
    assert time.monotonic() - start < 600
