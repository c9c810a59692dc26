"""The host-wide device lock (gpu_runner/gpulock.py): one timed phase at a time per device, across processes;
a clear message when it is held too long; and two evaluations started together time one after the other
and are both accepted."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from gpu_runner import gpulock, sandbox
from tests.evaluator.helpers import FIXTURES, HONEST, PROBLEM

REPO_ROOT = Path(__file__).resolve().parents[2]

HOLD_IN_ANOTHER_PROCESS = """
import sys, time
from gpu_runner import gpulock
with gpulock.held("cpu", phase="test holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _holder(seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_IN_ANOTHER_PROCESS, str(seconds)], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_it_waits_for_the_holder_in_another_process_and_reports_the_wait():
    holder = _holder(1.5)
    released = []
    threading.Thread(target=lambda: (holder.wait(), released.append(time.time())), daemon=True).start()
    with gpulock.held("cpu", phase="test waiter", timeout=60) as hold:
        acquired = time.time()
    holder.wait()
    assert hold.device == "cpu" and hold.waited_s >= 0.5, hold
    assert released and acquired >= released[0] - 0.2, (acquired, released)
    assert hold.released_at is not None and hold.released_at >= hold.acquired_at


def test_it_names_the_holder_when_it_gives_up():
    holder = _holder(30)
    try:
        with pytest.raises(gpulock.GpuLockTimeout) as caught:
            with gpulock.held("cpu", phase="test waiter", timeout=0.5):
                pytest.fail("the lock was acquired while another process held it")
    finally:
        holder.kill()
        holder.wait()
    message = str(caught.value)
    assert f"pid {holder.pid} (test holder)" in message and "KERNELHUB_GPU_LOCK_TIMEOUT_S" in message, message


def test_it_is_free_again_once_its_holder_died():
    holder = _holder(30)
    holder.kill()  # no release: the kernel drops an flock with its last file descriptor
    holder.wait()
    with gpulock.held("cpu", phase="test after a crash", timeout=5) as hold:
        assert hold.waited_s < 5


def test_it_refuses_a_malformed_timeout(monkeypatch):
    monkeypatch.setenv("KERNELHUB_GPU_LOCK_TIMEOUT_S", "soon")
    with pytest.raises(ValueError, match="KERNELHUB_GPU_LOCK_TIMEOUT_S must be a number of seconds"):
        with gpulock.held("cpu", phase="test"):
            pass


def test_it_keys_the_lock_by_the_physical_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234abcd-0000,GPU-ffff")
    assert gpulock.device_key("cuda") == "GPU-1234abcd-0000"
    assert gpulock.lock_path("GPU-1234abcd-0000").name == "GPU-1234abcd-0000.lock"
    assert gpulock.device_key("cpu") == "cpu"


ON_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


@pytest.mark.slow
@pytest.mark.parametrize("device, solution", [
    ("cpu", HONEST),
    pytest.param("cuda", (FIXTURES / "relu_scale_cuda.py").read_text(), marks=ON_GPU),
])
def test_two_evaluations_at_once_time_one_after_the_other_and_are_both_accepted(tmp_path, device, solution):
    (tmp_path / "problem.py").write_text(PROBLEM)
    (tmp_path / "solution.py").write_text(solution)
    cmd = [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(tmp_path / "problem.py"),
           "--solution", str(tmp_path / "solution.py"), "--device", device, "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    # The test holds the lock until both evaluations reached their timing stage, so both must wait for it
    # and then for each other.
    with gpulock.held(device, phase="test: until both evaluations are ready to time", timeout=60):
        procs = [subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        ready = [threading.Event() for _ in procs]
        logs: list[list[str]] = [[] for _ in procs]

        def follow(i: int) -> None:
            for line in procs[i].stderr:  # type: ignore[union-attr]
                logs[i].append(line)
                if "stage timing" in line:
                    ready[i].set()
            ready[i].set()  # ended without timing: the verdicts below say why

        for i in range(len(procs)):
            threading.Thread(target=follow, args=(i,), daemon=True).start()
        for event in ready:
            assert event.wait(600), "an evaluation did not reach its timing stage in 10 minutes"
        time.sleep(1.0)  # from "stage timing" to the lock: preparing the timing inputs
        released = time.time()
    results = []
    for i, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, "".join(logs[i])[-3000:]
        results.append(json.loads(out))
    for r in results:
        assert r["verdict"] == "accepted", r["message"]
        if sandbox.unshare_works() and os.geteuid() == 0:  # and on the GPU: CUDA works under the child's uid
            assert r["isolation"]["observed"]["uid"] >= sandbox.SANDBOX_UID_BASE, r["isolation"]
    solution_phases = [next(h for h in r["checks"]["device_lock"] if h["phase"] == "solution") for r in results]
    for phase in solution_phases:
        assert phase["device"] == gpulock.device_key(device), phase
        assert phase["held_from"] >= released - 0.1, (phase, released)
    # Every locked phase of one evaluation (its own timing, its baselines) against every one of the other's.
    first, second = ([(h["held_from"], h["held_until"]) for h in r["checks"]["device_lock"]] for r in results)
    for a_from, a_until in first:
        for b_from, b_until in second:
            assert a_until <= b_from or b_until <= a_from, (first, second)
    # The one that went second waited, for the test's hold and then for the first one's timed phase.
    later = max(solution_phases, key=lambda h: h["held_from"])
    earlier = min(solution_phases, key=lambda h: h["held_from"])
    assert later["waited_s"] > 0 and later["held_from"] >= earlier["held_until"], solution_phases
