"""What the machine was when it timed: NVML readings (clocks, temperature) and tool versions.

Every NVML call is guarded: a host without a GPU or without the driver gets `available: false`.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from gpu_runner import EVALUATOR_VERSION


def _visible_index() -> int:
    # NVML numbers GPUs physically; CUDA_VISIBLE_DEVICES may pick another one as cuda:0.
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def _nvml() -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # noqa: BLE001 - no driver, no library, no GPU: all mean "no NVML"
        return None


def compute_capability() -> tuple[int, int] | None:
    nv = _nvml()
    if nv is None:
        return None
    try:
        handle = nv.nvmlDeviceGetHandleByIndex(_visible_index())
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)
        return int(major), int(minor)
    except Exception:  # noqa: BLE001
        return None


def gpu_snapshot() -> dict[str, Any]:
    """Name, clocks, temperature, power and throttle reasons of the visible GPU, now."""
    nv = _nvml()
    if nv is None:
        return {"available": False}
    out: dict[str, Any] = {"available": True}
    try:
        h = nv.nvmlDeviceGetHandleByIndex(_visible_index())
    except Exception as e:  # noqa: BLE001
        return {"available": False, "error": str(e)}

    def read(key: str, fn: Any) -> None:
        try:
            value = fn()
            out[key] = value.decode() if isinstance(value, bytes) else value
        except Exception:  # noqa: BLE001 - a reading this GPU does not support stays out of the record
            pass

    read("name", lambda: nv.nvmlDeviceGetName(h))
    read("uuid", lambda: nv.nvmlDeviceGetUUID(h))
    read("sm_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
    read("mem_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
    read("max_sm_clock_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
    read("temperature_c", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
    read("power_w", lambda: round(nv.nvmlDeviceGetPowerUsage(h) / 1000.0, 1))
    read("power_limit_w", lambda: round(nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0, 1))
    read("utilization_pct", lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu)
    read("throttle_reasons", lambda: int(nv.nvmlDeviceGetCurrentClocksEventReasons(h)))
    read("driver", lambda: nv.nvmlSystemGetDriverVersion())
    read("memory_total_bytes", lambda: int(nv.nvmlDeviceGetMemoryInfo(h).total))
    cap = compute_capability()
    if cap:
        out["compute_capability"] = f"{cap[0]}.{cap[1]}"
    return out


def cpu_snapshot() -> dict[str, Any]:
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    out: dict[str, Any] = {"name": name, "cores": os.cpu_count()}
    try:
        out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq") as f:
            out["clock_mhz"] = int(f.read()) // 1000
    except (OSError, ValueError):
        pass
    return out


def device_snapshot(device: str) -> dict[str, Any]:
    if device == "cuda":
        snap = gpu_snapshot()
        snap["kind"] = "cuda"
        return snap
    snap = cpu_snapshot()
    snap["kind"] = "cpu"
    return snap


def device_model(device: str) -> str:
    """A stable name for the device model, used in cache keys (baselines, calibration)."""
    if device == "cuda":
        return str(gpu_snapshot().get("name") or "unknown-gpu")
    return str(cpu_snapshot().get("name")) + f" x{os.cpu_count()}"


def versions(child_reported: dict[str, Any] | None = None) -> dict[str, Any]:
    """Versions known to the parent, completed by what the child saw (triton, cupy, cuda runtime)."""
    import torch

    out: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "evaluator": EVALUATOR_VERSION,
    }
    for mod in ("triton", "cupy", "numpy"):
        out[mod] = None
    from gpu_runner.builds import toolchain

    out["cxx"] = toolchain(False)["cxx"]
    if child_reported:
        for key in ("triton", "cupy", "numpy", "cuda_runtime", "cudnn"):
            if isinstance(child_reported.get(key), (str, int)):
                out[key] = child_reported[key]
    return out
