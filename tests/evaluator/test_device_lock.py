"""The host-wide device lock (gpu_runner/gpulock.py): a timed phase has the device to itself, untimed ones
share it, across processes; a clear message when it is held too long; and two evaluations started together
never run anything beside each other's timed phases, and are both accepted."""

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from gpu_runner import gpulock, sandbox
from tests.evaluator.helpers import FIXTURES, HONEST, assert_no_timed_overlap, evaluations_at_once

REPO_ROOT = Path(__file__).resolve().parents[2]

HOLD_IN_ANOTHER_PROCESS = """
import sys, time
from gpu_runner import gpulock
with gpulock.held("cpu", phase="test holder", shared=sys.argv[2] == "shared"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _holder(seconds: float, mode: str = "exclusive", wait: bool = True) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_IN_ANOTHER_PROCESS, str(seconds), mode], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    if wait:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_shared_holders_run_together():
    holder = _holder(30, "shared")
    try:
        with gpulock.held("cpu", phase="test second shared", shared=True, timeout=5) as hold:
            assert hold.waited_s < 1 and hold.shared
    finally:
        holder.kill()
        holder.wait()


def test_a_timed_phase_waits_for_a_shared_holder_and_a_shared_one_for_a_timed_phase():
    for first, second in (("shared", False), ("exclusive", True)):
        holder = _holder(1.5, first)
        with gpulock.held("cpu", phase="test waiter", shared=second, timeout=60) as hold:
            pass
        holder.wait()
        assert hold.waited_s >= 0.5, (first, hold)


def test_a_waiting_timed_phase_goes_before_shared_phases_that_come_after_it():
    reader = _holder(2.0, "shared")
    writer = _holder(1.0, "exclusive", wait=False)  # queues at the gate behind the shared holder
    gate = gpulock.lock_path("cpu").with_suffix(".gate")
    deadline = time.monotonic() + 30
    while True:  # until the writer holds the gate (a try-lock of it fails)
        with open(gate, "a+") as g:
            try:
                fcntl.flock(g, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(g, fcntl.LOCK_UN)
            except BlockingIOError:
                break
        assert time.monotonic() < deadline, "the exclusive waiter never reached the gate"
        time.sleep(0.02)
    with gpulock.held("cpu", phase="test late shared", shared=True, timeout=60) as late:
        writer_line = writer.stdout.readline().strip() if writer.stdout else ""
    reader.wait()
    writer.wait()
    # The late shared holder got in only after the writer had held (and released) the lock.
    assert writer_line == "held" and late.waited_s >= 0.9, late


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
    with pytest.raises(ValueError, match="KERNELHUB_GPU_LOCK_TIMEOUT_S='soon': a number is expected"):
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
    # Started together, so one's timed phase meets the other's reference trials, trials or timing.
    results = evaluations_at_once(tmp_path, solution, device=device)
    for r in results:
        assert r["verdict"] == "accepted", r["message"]
        if sandbox.unshare_works() and os.geteuid() == 0:  # and on the GPU: CUDA works under the child's uid
            assert r["isolation"]["observed"]["uid"] >= sandbox.SANDBOX_UID_BASE, r["isolation"]
    for r in results:
        phases = {(h["phase"], h["shared"]) for h in r["checks"]["device_lock"]}
        assert {("solution", False), ("trials", True), ("reference trials", True)} <= phases, phases
        assert all(h["device"] == gpulock.device_key(device) for h in r["checks"]["device_lock"])
    # No timed (exclusive) hold of one evaluation overlaps any hold of the other; shared ones may overlap.
    assert_no_timed_overlap(*results)
