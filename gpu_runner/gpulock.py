"""A host-wide lock per physical GPU (one more for the host's CPUs): exclusive while an evaluation times,
shared while it uses the device otherwise.

Several evaluations on one host may start, build and load at the same time, and run their untimed device work
(reference outputs, trials) together; while one times, no other evaluation runs anything on that device, so
no timed call ever shares its GPU with another evaluation's work. Holds are never nested. The
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
from typing import Any

from gpu_runner import config, sandbox

POLL_S = 0.05


def timeout_s() -> float:
    """KERNELHUB_GPU_LOCK_TIMEOUT_S, for a caller without the evaluation's settings (config.py)."""
    return float(config.setting("gpu_lock_timeout_s"))


class GpuLockTimeout(RuntimeError):
    """Another evaluation held the device longer than the timeout; the message names it."""


@dataclass
class Hold:
    device: str  # the physical device the lock is for: "cpu", a GPU's UUID, or "cuda-<index>"
    waited_s: float  # time spent waiting for the lock, counted against no deadline of the evaluation
    acquired_at: float  # time.time() when it was acquired: comparable across processes
    released_at: float | None = None
    shared: bool = False


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


def _acquire(f: Any, mode: int, *, started: float, limit: float, key: str, path: Path, holder_file: Any) -> None:
    while True:
        try:
            fcntl.flock(f, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() - started > limit:
                holder_file.seek(0)
                holder = holder_file.read(300).strip() or "evaluations using the device (shared)"
                raise GpuLockTimeout(
                    f"waited {limit:.0f} s for the host-wide lock of device {key} ({path}); it is held by "
                    f"{holder}. Wait for that evaluation to end, or stop it if it is stuck; "
                    "KERNELHUB_GPU_LOCK_TIMEOUT_S sets how long to wait") from None
            time.sleep(POLL_S)


@contextmanager
def held(device: str, *, phase: str, timeout: float | None = None, shared: bool = False) -> Iterator[Hold]:
    """Hold the lock of `device` ("cpu" or "cuda") for the duration of the block.

    Exclusive (the default) for a timed phase; `shared=True` for a phase that uses the device without timing
    it (reference outputs, trials, preparing inputs, torch.compile's first call): shared holders run together,
    and none of them runs while an exclusive holder times. An exclusive waiter queues at a gate that new
    shared holders must pass, so a stream of shared phases cannot starve it.
    Waits up to `timeout` seconds (KERNELHUB_GPU_LOCK_TIMEOUT_S, 1800 by default), then raises
    GpuLockTimeout, saying who holds it.
    """
    key = device_key(device)
    limit = timeout_s() if timeout is None else timeout
    path = lock_path(key)
    started = time.monotonic()
    with open(path, "a+") as f, open(path.with_suffix(".gate"), "a+") as gate:
        _acquire(gate, fcntl.LOCK_EX, started=started, limit=limit, key=key, path=path, holder_file=f)
        try:
            _acquire(f, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, started=started, limit=limit, key=key,
                     path=path, holder_file=f)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        hold = Hold(device=key, waited_s=time.monotonic() - started, acquired_at=time.time(), shared=shared)
        if not shared:
            f.seek(0)
            f.truncate()
            f.write(f"pid {os.getpid()} ({phase}) since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
            f.flush()
        try:
            yield hold
        finally:
            hold.released_at = time.time()
            if not shared:
                f.seek(0)
                f.truncate()
                f.flush()
            fcntl.flock(f, fcntl.LOCK_UN)
