"""Helpers shared by the evaluator benchmarks: pairing examples with problems, machine description."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def pairs(track: str, language: str) -> list[tuple[Path, Path]]:
    """(problem, example solution) for every example of one track (`gpu`/`cpu`) and language folder."""
    out = []
    for solution in sorted((REPO / "examples" / track / language).glob("*.py")):
        matches = list((REPO / "problems" / track).glob(f"level*/{solution.name}"))
        if matches:
            out.append((matches[0], solution))
    return out


def machine() -> dict:
    info = {"host_cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    try:
        info["nproc"] = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
    except (OSError, ValueError):
        pass
    return info


def write(path: str | None, data: dict) -> None:
    text = json.dumps(data, indent=2, default=str)
    print(text)
    if path:
        Path(path).write_text(text)


# --- Used by the evaluator benchmarks of issue 2 (evaluator_*.py): a run on a GPU host can be cut at any moment,
# so they keep a deadline, save what they have after every evaluation, and stop cleanly on SIGTERM.


def problem_for(solution: Path) -> Path:
    """The bundled problem an example solution answers (same file name, track from its folder)."""
    track = "cpu" if "cpu" in solution.resolve().relative_to(REPO).parts[:2] else "gpu"
    matches = sorted((REPO / "problems" / track).glob(f"level*/{solution.name}"))
    if not matches:
        raise SystemExit(f"no problem named {solution.name} under problems/{track}/: pass --problem")
    return matches[0]


def host(device: str) -> dict:
    """machine(), plus the device as the evaluator sees it (NVML clocks and temperature, or the CPU), the
    host's CPU and load, and the commit of this checkout."""
    from gpu_runner import sysinfo

    info = machine()
    info["device"] = sysinfo.device_snapshot(device)
    info["cpu"] = sysinfo.cpu_snapshot()
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=REPO, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        info["commit"] = None
    return info


class Deadline:
    """Seconds left of the budget given on the command line (None: no deadline)."""

    def __init__(self, seconds: float | None) -> None:
        self.end = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float:
        return float("inf") if self.end is None else self.end - time.monotonic()

    def allows(self, needed_s: float) -> bool:
        return self.left() > needed_s


def stop_on_sigterm() -> None:
    """SIGTERM (`timeout`, a cut call) raises KeyboardInterrupt in the main thread, so `finally` blocks run:
    the evaluator kills its children and the script saves what it measured."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: cleanup must not be interrupted again
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def save(path: str | None, data: dict) -> None:
    """Write the JSON report (atomically: a kill mid-write leaves the previous version)."""
    if not path:
        return
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(target)


def cv(values: list) -> float | None:
    """Coefficient of variation (sample standard deviation / mean) of the numbers in `values`."""
    import statistics

    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) < 2 or statistics.fmean(numbers) == 0:
        return None
    return statistics.stdev(numbers) / statistics.fmean(numbers)
