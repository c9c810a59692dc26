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
