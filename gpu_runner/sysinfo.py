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


# Per GPU (NVML's index): the timestamp of the last utilization sample read, so that each reading covers the time
# since the one before. Only `serve`'s heartbeat loop reads it (one thread).
_busy_last_seen: dict[int, int] = {}


def _sample_value(nv: Any, value_type: int, sample: Any) -> float:
    field = {nv.NVML_VALUE_TYPE_DOUBLE: "dVal", nv.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
             nv.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal", nv.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
             nv.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal"}.get(value_type)
    if field is None:
        raise ValueError(f"NVML gave utilization samples of value type {value_type}")
    return float(getattr(sample.sampleValue, field))


def gpu_busy(index: int | None = None) -> dict[str, Any] | None:
    """How busy the GPU was since the previous call for it: the fraction of the time that a kernel ran on it.

    From the driver's own utilization samples (nvmlDeviceGetSamples, NVML_GPU_UTILIZATION_SAMPLES): each is the
    percentage of its sample period (1/6 s to 1 s, by product) during which one or more kernels ran; their mean,
    weighted by their periods, over every sample newer than the last one read. The first call reads what the driver
    still buffers. `busy_window_s` is the time those samples cover: shorter than the interval between two calls
    when the driver's buffer held less, never stretched to it. None without NVML or without that GPU (a CPU
    host); `busy_fraction` None, with `busy_error`, when the driver gives no sample (never a made-up number).
    `index`: NVML's (physical) index; by default the GPU that CUDA_VISIBLE_DEVICES shows first.
    """
    nv = _nvml()
    if nv is None:
        return None
    index = _visible_index() if index is None else index
    try:
        handle = nv.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # noqa: BLE001 - no such GPU
        return None
    last_seen = _busy_last_seen.get(index, 0)
    try:
        value_type, samples = nv.nvmlDeviceGetSamples(handle, nv.NVML_GPU_UTILIZATION_SAMPLES, last_seen)
        points = sorted((int(s.timeStamp), _sample_value(nv, value_type, s)) for s in samples
                        if int(s.timeStamp) > last_seen)
    except Exception as e:  # noqa: BLE001 - NVML_ERROR_NOT_FOUND (no sample since last_seen), NOT_SUPPORTED ...
        return {"busy_fraction": None, "busy_window_s": None, "busy_samples": 0,
                "busy_error": str(e) or type(e).__name__}
    if points:
        _busy_last_seen[index] = points[-1][0]
    return busy_from_samples(points, last_seen=last_seen)


def busy_from_samples(points: list[tuple[int, float]], *, last_seen: int = 0) -> dict[str, Any]:
    """The busy fraction from utilization samples (timestamp in microseconds, percent), in time order, all newer
    than `last_seen` (0: none read before). Each sample covers the time since the one before it; the first, the
    time since `last_seen` when that is no longer than two typical periods (else samples were dropped from the
    driver's buffer, and it gets a typical period: the window then says how much time the samples cover)."""
    if not points:
        return {"busy_fraction": None, "busy_window_s": None, "busy_samples": 0,
                "busy_error": "no utilization sample since the last reading"}
    if any(not 0 <= value <= 100 for _t, value in points):
        return {"busy_fraction": None, "busy_window_s": None, "busy_samples": len(points),
                "busy_error": "a utilization sample outside 0-100%"}
    gaps = [b[0] - a[0] for a, b in zip(points, points[1:], strict=False)]
    positive = sorted(g for g in gaps if g > 0)
    typical = positive[len(positive) // 2] if positive else 0
    first = points[0][0] - last_seen if last_seen else 0
    if typical and not 0 < first <= 2 * typical:
        first = typical
    periods = [first, *gaps]
    total = sum(periods)
    if total <= 0:  # one sample, nothing to size its period by: its own value, over an unknown window
        return {"busy_fraction": round(points[0][1] / 100.0, 4), "busy_window_s": None, "busy_samples": 1}
    mean = sum(value * period for (_t, value), period in zip(points, periods, strict=True)) / total
    return {"busy_fraction": round(mean / 100.0, 4), "busy_window_s": round(total / 1e6, 3),
            "busy_samples": len(points)}


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


def versions(child_reported: dict[str, Any] | None = None, *, cxx: str | None = None) -> dict[str, Any]:
    """Versions known to the parent, completed by what the child saw (triton, cupy, cuda runtime). cxx: the
    C++ compiler's version line (builds.toolchain, which the caller asks: builds reads this module, not the
    other way round)."""
    import torch

    out: dict[str, Any] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "evaluator": EVALUATOR_VERSION,
    }
    for mod in ("triton", "cupy", "numpy"):
        out[mod] = None
    out["cxx"] = cxx
    if child_reported:
        for key in ("triton", "cupy", "numpy", "cuda_runtime", "cudnn"):
            if isinstance(child_reported.get(key), (str, int)):
                out[key] = child_reported[key]
    return out
