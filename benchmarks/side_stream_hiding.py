"""Can work on a stream of the solution's own run before the start event, while the GPU is still busy with the
harness's flush and head start? (docs/EVALUATOR.md: one hardware queue, and why the head start was off in 1.6.x.)

The evaluator's timed call on a GPU queues, on the current stream: the L2 flush, the head start's spin kernel
(child.HEAD_START_MAX_US), the start event; then forward; then the end event. Kernels that forward puts on another
stream are ordered after none of these. This script queues the same sequence in a plain process and, in forward's
place, launches a kernel of about a hundred microseconds on a side stream with events of its own around it:

- torch: a `torch.cuda.Stream()` (and one at the highest priority),
- cupy: a `cupy.cuda.Stream` (its own kernel, not torch's), where CuPy is installed,

and reports, per call, where the side kernel began and ended relative to the start event (negative: before the
window opened). Run it with and without CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue for the context: the
question is whether that orders another stream's kernel after the start event). It also reports what one
connection costs a plain event timing of the same kernel on the current stream.

    python benchmarks/side_stream_hiding.py --spin-us 300 --out side_streams.json
    CUDA_DEVICE_MAX_CONNECTIONS=1 python benchmarks/side_stream_hiding.py --spin-us 300 --out side_streams_1.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

CALLS = 30
FLUSH_BYTES = 256 << 20
WORK_ELEMENTS = 32 << 20  # float32: 128 MiB read, 128 MiB written, about 100 us on an H200


def spin_rate(torch) -> float:
    """Cycles per microsecond of torch.cuda._sleep, by events."""
    torch.cuda._sleep(1000)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(2_000_000)
    end.record()
    end.synchronize()
    return 2_000_000 / (start.elapsed_time(end) * 1000.0)


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1]}


def torch_side(torch, spin_cycles: int, flush, x, y, priority: int | None) -> dict:
    side = torch.cuda.Stream() if priority is None else torch.cuda.Stream(priority=priority)
    rows = []
    for _ in range(CALLS):
        torch.cuda.synchronize()
        ev = {k: torch.cuda.Event(enable_timing=True) for k in ("start", "end", "side_begin", "side_end")}
        flush.zero_()
        if spin_cycles:
            torch.cuda._sleep(spin_cycles)
        ev["start"].record()
        # forward's place: the kernel on the side stream, events of its own around it
        with torch.cuda.stream(side):
            ev["side_begin"].record()
            torch.clamp_min(x, 0.0, out=y)
            ev["side_end"].record()
        ev["end"].record()
        torch.cuda.synchronize()
        rows.append({k: ev["start"].elapsed_time(ev[k]) * 1000.0 for k in ("side_begin", "side_end", "end")})
    return describe(rows)


def cupy_side(cupy, torch, spin_cycles: int, flush, n: int) -> dict:
    kernel = cupy.RawKernel(r"""
extern "C" __global__ void relu_side(const float* x, float* y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.f ? x[i] : 0.f;
}""", "relu_side")
    side = cupy.cuda.Stream(non_blocking=True)
    x = cupy.random.standard_normal(n, dtype=cupy.float32)
    y = cupy.empty_like(x)
    main = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    kernel((1024,), (256,), (x, y, cupy.int64(n)), stream=side)  # loaded before it is timed
    rows = []
    for _ in range(CALLS):
        torch.cuda.synchronize()
        side.synchronize()
        ev = {k: cupy.cuda.Event() for k in ("start", "end", "side_begin", "side_end")}
        flush.zero_()
        if spin_cycles:
            torch.cuda._sleep(spin_cycles)
        ev["start"].record(main)
        ev["side_begin"].record(side)
        kernel((4096,), (256,), (x, y, cupy.int64(n)), stream=side)
        ev["side_end"].record(side)
        ev["end"].record(main)
        ev["end"].synchronize()
        side.synchronize()
        rows.append({k: cupy.cuda.get_elapsed_time(ev["start"], ev[k]) * 1000.0
                     for k in ("side_begin", "side_end", "end")})
    return describe(rows)


def describe(rows: list[dict]) -> dict:
    hidden = [r for r in rows if r["side_end"] <= 0.0]
    return {"calls": len(rows),
            "side_begin_us_from_start": summary([r["side_begin"] for r in rows]),
            "side_end_us_from_start": summary([r["side_end"] for r in rows]),
            "end_us_from_start": summary([r["end"] for r in rows]),
            "side_work_us": summary([r["side_end"] - r["side_begin"] for r in rows]),
            "calls_ended_before_start": len(hidden),
            "calls_begun_before_start": sum(1 for r in rows if r["side_begin"] < 0.0)}


def plain_event_time(torch, flush, x, y) -> dict:
    """The same kernel on the current stream, timed as KernelBench does (flush, events around it)."""
    times = []
    for i in range(110):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        start.record()
        torch.clamp_min(x, 0.0, out=y)
        end.record()
        end.synchronize()
        if i >= 10:
            times.append(start.elapsed_time(end) * 1000.0)
    return summary(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spin-us", type=float, default=300.0, help="the head start's spin (0: the flush alone)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("side_stream_hiding: needs a CUDA GPU", file=sys.stderr)
        return 2
    flush = torch.empty(FLUSH_BYTES // 4, device="cuda")
    x = torch.randn(WORK_ELEMENTS, device="cuda")
    y = torch.empty_like(x)
    rate = spin_rate(torch)
    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "device": torch.cuda.get_device_name(),
                    "CUDA_DEVICE_MAX_CONNECTIONS": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
                    "spin_cycles_per_us": rate, "plain_event_time_us": plain_event_time(torch, flush, x, y)}
    low, high = torch.cuda.Stream.priority_range() if hasattr(torch.cuda.Stream, "priority_range") else (0, -1)
    for spin_us in sorted({0.0, args.spin_us}):
        cycles = int(spin_us * rate)
        key = f"spin_{spin_us:.0f}us"
        result[key] = {"torch_stream": torch_side(torch, cycles, flush, x, y, None),
                       "torch_stream_high_priority": torch_side(torch, cycles, flush, x, y, min(low, high))}
        try:
            import cupy
        except ImportError as e:
            result[key]["cupy_stream"] = f"not run: {e}"
        else:
            result[key]["cupy_stream"] = cupy_side(cupy, torch, cycles, flush, WORK_ELEMENTS)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
