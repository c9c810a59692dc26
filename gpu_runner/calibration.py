"""A runner's measured ceilings: copy bandwidth, a large matmul (fp32 with TF32 off, and bf16), one fixed
reference kernel. Measured at `serve` start for each worker's GPU and again between jobs every
KERNELHUB_CALIBRATE_EVERY_S; posted to the site (POST /api/v1/runners/calibration/), which compares them with
the pool's median and drains an outlier.

The copy bandwidth also feeds the evaluator's speed-of-light cache (gpu_runner/limits.py), measured the same
way (best of 10 copies, read + write counted), so one measurement serves both; the cache keeps the highest.

`python -m gpu_runner.calibration [--device cpu|cuda] [--json]` measures the device this process sees (pin it
with CUDA_VISIBLE_DEVICES) and prints the result.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from gpu_runner import gpulock

logger = logging.getLogger("gpu_runner.calibration")

# Sizes: large enough to reach the device's ceiling, small enough to take seconds. A CPU runner gets smaller ones
# (the 2-core hosts of the cpu pool take about a second each).
SIZES: dict[str, dict[str, Any]] = {
    "cuda": {"copy_bytes": 1 << 30, "matmul_n": 8192, "reference_shape": (8192, 8192)},
    "cpu": {"copy_bytes": 64 << 20, "matmul_n": 1024, "reference_shape": (1024, 4096)},
}
REFERENCE_KERNEL = "softmax over the last dimension of a float32 tensor of shape {shape}, seed 0"


def _timer(torch: Any, device: str) -> Any:
    """Seconds one call of fn takes: CUDA events on a GPU, perf_counter on a CPU."""

    def time_call(fn: Any) -> float:
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return float(start.elapsed_time(end)) / 1e3
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    return time_call


def _copy_bytes_per_s(torch: Any, device: str, nbytes: int, time_call: Any) -> float:
    """One read and one write of every byte, best of 10 (as the evaluator's own calibration)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = min(time_call(lambda: dst.copy_(src)) for _ in range(10))
    return 2 * nbytes / best


def _matmul_tflops(torch: Any, device: str, n: int, dtype: Any, generator: Any, time_call: Any) -> float:
    """A square matmul on random data, best of 5; fp32 with TF32 off is the true fp32 ceiling."""
    a = torch.randn(n, n, device=device, generator=generator).to(dtype)
    b = torch.randn(n, n, device=device, generator=generator).to(dtype)
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.mm(a, b)
        best = min(time_call(lambda: torch.mm(a, b)) for _ in range(5))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32
    return 2 * n**3 / best / 1e12


def _reference_kernel_s(torch: Any, device: str, shape: tuple[int, int], generator: Any, time_call: Any) -> float:
    """One fixed memory-bound op, median of 20: a host that runs it slower than its pool shows here."""
    x = torch.randn(*shape, device=device, generator=generator)
    torch.softmax(x, dim=-1)
    return float(statistics.median(time_call(lambda: torch.softmax(x, dim=-1)) for _ in range(20)))


def measure(device: str) -> dict[str, Any]:
    """The ceilings of the device this process sees (cuda:0 after pinning, or the CPU)."""
    import torch

    from gpu_runner import sysinfo

    if device not in SIZES:
        raise ValueError(f"Unknown device {device!r}: use cpu or cuda.")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("No CUDA device is visible to this process: check CUDA_VISIBLE_DEVICES and the driver.")
    sizes = SIZES[device]
    time_call = _timer(torch, device)
    generator = torch.Generator(device=device).manual_seed(0)

    bytes_per_s = _copy_bytes_per_s(torch, device, sizes["copy_bytes"], time_call)
    n = sizes["matmul_n"]
    tflops = {dtype: _matmul_tflops(torch, device, n, dtype, generator, time_call)
              for dtype in ([torch.float32, torch.bfloat16] if device == "cuda" else [torch.float32])}
    shape = sizes["reference_shape"]
    reference_s = _reference_kernel_s(torch, device, shape, generator, time_call)
    if device == "cuda":
        torch.cuda.empty_cache()

    versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    if device == "cuda":
        snapshot = sysinfo.gpu_snapshot()
        versions["driver"] = snapshot.get("driver")
    return {
        "device": device,
        "device_model": sysinfo.device_model(device),
        "copy_bandwidth_gbps": round(bytes_per_s / 1e9, 3),
        "copy_bytes_per_s": bytes_per_s,
        "matmul_fp32_tflops": round(tflops[torch.float32], 4),
        "matmul_bf16_tflops": round(tflops[torch.bfloat16], 4) if torch.bfloat16 in tflops else None,
        "reference_kernel_us": round(reference_s * 1e6, 3),
        "reference_kernel": REFERENCE_KERNEL.format(shape=tuple(shape)),
        "matmul_n": n,
        "copy_bytes": sizes["copy_bytes"],
        "versions": versions,
    }


def store_for_evaluator(result: dict[str, Any]) -> bool:
    """Feed the evaluator's speed-of-light cache (gpu_runner/limits.py) with this measurement, where it is the
    highest yet for the device model: the floor it sets must never reject an honest kernel because one
    measurement ran while the host was busy. Returns whether the cache changed."""
    from gpu_runner import limits

    measured = float(result["copy_bytes_per_s"])
    cached = limits.cached_bandwidth(result["device_model"])
    if cached is not None and cached >= measured:
        return False
    limits.store_bandwidth(result["device_model"], measured,
                           f"best of 10 copies of {result['copy_bytes']} bytes (gpu_runner.calibration)")
    return True


def site_payload(result: dict[str, Any], worker: str) -> dict[str, Any]:
    return {"worker": worker, "device_model": result["device_model"],
            "copy_bandwidth_gbps": result["copy_bandwidth_gbps"], "matmul_fp32_tflops": result["matmul_fp32_tflops"],
            "matmul_bf16_tflops": result["matmul_bf16_tflops"], "reference_kernel_us": result["reference_kernel_us"],
            "versions": result["versions"]}


def post(client: Any, result: dict[str, Any], worker: str) -> dict[str, Any]:
    """Send it to the site; the answer says whether this runner was found an outlier and drained."""
    answer: dict[str, Any] = client.request("POST", "/api/v1/runners/calibration/", json=site_payload(result, worker),
                                            retry_for_s=30)
    if answer.get("is_outlier"):
        logger.warning("The site found %s an outlier of its pool and drained this runner: %s", worker,
                       answer.get("drain_reason"))
    return answer


def calibrate_in_subprocess(*, device: str, pin: str, timeout_s: float = 600) -> dict[str, Any]:
    """Measure one GPU (pinned with CUDA_VISIBLE_DEVICES) in a process of its own, so that serve itself never
    holds a CUDA context. Raises RuntimeError with the child's error when it fails."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = pin
    done = subprocess.run([sys.executable, "-m", "gpu_runner.calibration", "--device", device, "--json"],
                          env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"calibration failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


_last_calibrated_at = time.monotonic()  # serve calibrated every GPU just before starting this worker


def due(every_s: float) -> bool:
    """Whether after_job would re-measure now."""
    return every_s > 0 and time.monotonic() - _last_calibrated_at >= every_s


def after_job(client: Any, *, device: str, worker: str, every_s: float) -> None:
    """After a job, re-measure once every_s seconds (KERNELHUB_CALIBRATE_EVERY_S; 0 or less: never) have passed,
    holding the device's lock alone (gpulock.py), so that no other job of the worker (KERNELHUB_GPU_JOBS) uses the
    GPU meanwhile. A failure is logged, never raised: it must not cost the job that just finished."""
    global _last_calibrated_at
    if every_s <= 0 or time.monotonic() - _last_calibrated_at < every_s:
        return
    _last_calibrated_at = time.monotonic()
    try:
        # A minute at most: a GPU that another job of the worker still uses is calibrated when next due instead.
        with gpulock.held(device, phase="calibration", timeout=60):
            result = measure(device)
        store_for_evaluator(result)
        post(client, result, worker)
    except Exception:  # noqa: BLE001 - see the docstring
        logger.exception("Periodic calibration of %s failed", worker)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_runner.calibration",
                                     description="Measure this device's ceilings and refresh the evaluator's "
                                                 "speed-of-light cache.")
    parser.add_argument("--device", choices=sorted(SIZES), default="cuda")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--no-store", action="store_true", help="do not refresh the evaluator's cache")
    args = parser.parse_args(argv)
    try:
        result = measure(args.device)
    except (RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.no_store:
        store_for_evaluator(result)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"{result['device_model']}: copy {result['copy_bandwidth_gbps']:.1f} GB/s, fp32 matmul "
              f"{result['matmul_fp32_tflops']:.3f} TFLOP/s, bf16 {result['matmul_bf16_tflops'] or '-'} TFLOP/s, "
              f"reference kernel {result['reference_kernel_us']:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
