"""A host-wide lock per physical GPU (one more for the host's CPUs), held while an evaluation times.

Several evaluations on one host may start, build, load and check at the same time; only one at a time
times on a given device, so no timed call ever shares its GPU with another evaluation's timed calls. The
lock is an flock on KERNELHUB_CACHE_DIR/gpu-locks/<device>.lock, so every evaluator process on the host
that uses that cache directory takes part, and the kernel releases it when its holder dies: a crashed
evaluator never leaves a GPU locked. The file names the holder (pid, phase, since when) for the message
of whoever waits too long.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpu_runner import sandbox

POLL_S = 0.05


def timeout_s() -> float:
    value = os.environ.get("KERNELHUB_GPU_LOCK_TIMEOUT_S", "1800")
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"KERNELHUB_GPU_LOCK_TIMEOUT_S must be a number of seconds, not {value!r}") from None
    if not seconds > 0:
        raise ValueError(f"KERNELHUB_GPU_LOCK_TIMEOUT_S must be positive, not {value!r}")
    return seconds


class GpuLockTimeout(RuntimeError):
    """Another evaluation held the device longer than the timeout; the message names it."""


@dataclass
class Hold:
    device: str  # the physical device the lock is for: "cpu", a GPU's UUID, or "cuda-<index>"
    waited_s: float  # time spent waiting for the lock, counted against no deadline of the evaluation
    acquired_at: float  # time.time() when it was acquired: comparable across processes
    released_at: float | None = None


def device_key(device: str) -> str:
    """Which physical device `device` means in this process: the GPU that CUDA will call cuda:0."""
    if device == "cpu":
        return "cpu"
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    if first.startswith(("GPU-", "MIG-")):
        return first
    from gpu_runner import sysinfo

    uuid = sysinfo.gpu_snapshot().get("uuid")
    # Without NVML the index is the best name there is (every process on the host sees the same numbering).
    return str(uuid) if uuid else f"cuda-{first or '0'}"


def lock_path(key: str) -> Path:
    folder = sandbox.cache_dir() / "gpu-locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", key) + ".lock")


@contextmanager
def held(device: str, *, phase: str, timeout: float | None = None) -> Iterator[Hold]:
    """Hold the lock of `device` ("cpu" or "cuda") for the duration of the block.

    Waits up to `timeout` seconds (KERNELHUB_GPU_LOCK_TIMEOUT_S, 1800 by default), then raises
    GpuLockTimeout, saying who holds it.
    """
    key = device_key(device)
    limit = timeout_s() if timeout is None else timeout
    path = lock_path(key)
    started = time.monotonic()
    with open(path, "a+") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - started > limit:
                    f.seek(0)
                    holder = f.read(300).strip() or "an unknown process"
                    raise GpuLockTimeout(
                        f"waited {limit:.0f} s for the host-wide lock of device {key} ({path}); it is held by "
                        f"{holder}. Wait for that evaluation to end, or stop it if it is stuck; "
                        "KERNELHUB_GPU_LOCK_TIMEOUT_S sets how long to wait") from None
                time.sleep(POLL_S)
        hold = Hold(device=key, waited_s=time.monotonic() - started, acquired_at=time.time())
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} ({phase}) since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        f.flush()
        try:
            yield hold
        finally:
            hold.released_at = time.time()
            f.seek(0)
            f.truncate()
            f.flush()
            fcntl.flock(f, fcntl.LOCK_UN)
