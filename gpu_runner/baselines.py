"""Cached baseline timings (PyTorch eager and torch.compile) per problem, device model and library versions.

The GPU times submissions, not the same eager model again and again: a baseline is measured once, by a
trusted child timed exactly like a solution, and re-used by every later evaluation of that problem on the
same device model with the same torch, CUDA, Triton and evaluator versions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gpu_runner import EVALUATOR_VERSION, sandbox


def key(*, problem_hash: str, device_model: str, versions: dict[str, Any], mode: str) -> str:
    parts = {
        "problem": problem_hash, "device": device_model, "mode": mode, "evaluator": EVALUATOR_VERSION,
        "versions": {k: versions.get(k) for k in ("torch", "cuda", "triton", "cuda_runtime", "python")},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _path(cache_key: str) -> Path:
    directory = sandbox.cache_dir() / "baselines"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{cache_key}.json"


def load(cache_key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_path(cache_key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("median_us"), (int, float)):
        return None
    return data


# A noisy measurement (busy host) is not trusted for good: it is measured again, a few times at most.
NOISY_RSE = 0.05
MAX_MEASUREMENTS = 3


def worth_remeasuring(stats: dict[str, Any]) -> bool:
    rse = stats.get("rse")
    noisy = not isinstance(rse, (int, float)) or rse > NOISY_RSE
    return noisy and int(stats.get("measurements", 1)) < MAX_MEASUREMENTS


def keep_better(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Of two measurements, the one with the lower median (noise only ever adds time); counts attempts."""
    if old is None:
        return {**new, "measurements": 1}
    count = int(old.get("measurements", 1)) + 1
    best = new if new["median_us"] < old["median_us"] else old
    return {**best, "measurements": count}


def store(cache_key: str, stats: dict[str, Any]) -> None:
    path = _path(cache_key)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stats))
    tmp.replace(path)
