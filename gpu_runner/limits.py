"""The speed-of-light bound: no honest kernel moves its bytes faster than the device's memory can.

least bytes = every input read once + every output written once. A time below least_bytes / (measured copy
bandwidth x SOL_MARGIN) is physically impossible on that device, and is rejected. The bandwidth is measured
once per device model (a large device-to-device copy, by a trusted child) and cached in
KERNELHUB_CACHE_DIR/calibration/.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gpu_runner import sandbox

# Headroom over the measured copy bandwidth: caches (a CPU's L3, what the L2 flush leaves) and the difference
# between a copy and a pure read may make an honest kernel beat the copy figure, never by this much.
SOL_MARGIN = {"cuda": 2.0, "cpu": 4.0}
CALIBRATION_FORMAT = 1


def _path(device_model: str) -> Path:
    digest = hashlib.sha256(f"{CALIBRATION_FORMAT}:{device_model}".encode()).hexdigest()[:24]
    directory = sandbox.cache_dir() / "calibration"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{digest}.json"


def cached_bandwidth(device_model: str) -> float | None:
    try:
        data = json.loads(_path(device_model).read_text())
        value = float(data["bytes_per_s"])
        return value if value > 0 else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store_bandwidth(device_model: str, bytes_per_s: float, how: str) -> None:
    path = _path(device_model)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"device_model": device_model, "bytes_per_s": bytes_per_s, "how": how}))
    tmp.replace(path)


def least_bytes(input_bytes: int, output_bytes: int) -> int:
    return int(input_bytes) + int(output_bytes)


def floor_us(device: str, nbytes: int, bytes_per_s: float | None) -> float | None:
    """The least time in microseconds a kernel moving nbytes can take here, or None when uncalibrated."""
    if not bytes_per_s or nbytes <= 0:
        return None
    return nbytes / (bytes_per_s * SOL_MARGIN[device]) * 1e6


def check(device: str, runtime_us: float, nbytes: int, bytes_per_s: float | None) -> dict[str, Any]:
    floor = floor_us(device, nbytes, bytes_per_s)
    return {
        "least_bytes": nbytes,
        "bandwidth_gbps": round(bytes_per_s / 1e9, 2) if bytes_per_s else None,
        "floor_us": floor,
        "margin": SOL_MARGIN[device],
        "ok": floor is None or runtime_us >= floor,
    }
