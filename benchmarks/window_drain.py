"""The drain (gpu_runner/drain.py) outside the evaluator, against plain CUDA events, on a GPU host.

For ReLUs of a few sizes (a few microseconds to about a millisecond), in one process with the children's one
hardware queue (CUDA_DEVICE_MAX_CONNECTIONS, --connections):
- plain: flush, start event, the kernel on the current stream, end event (KernelBench's and do_bench's timing);
- drained: the same with the drain before the end event, less the drain's cost measured as the evaluator does
  (empty windows after a spin, with and without it): must read as plain;
- side stream, plain and drained: the kernel on a stream of its own that the current stream never waits for (the
  side-stream exploit), at the default and at high priority: plain events read it as almost nothing, the drain
  must read it as at least the kernel's own time;
each with and without a head start (a spin before the start event, so the host has queued everything first).
Also whether every launch met in full (the blocks' count) and none timed out.

    python benchmarks/window_drain.py --out results.json [--calls 200] [--connections 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--sizes", default="131072,4194304,33554432,134217728", help="elements of each ReLU")
    args = parser.parse_args()
    os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = str(args.connections)
    import torch

    from gpu_runner.drain import Drain

    if not torch.cuda.is_available():
        print("window_drain: needs a CUDA device", file=sys.stderr)
        return 2
    torch.cuda.init()
    drain = Drain(torch)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    spin = torch.cuda._sleep
    cur = torch.cuda.current_stream()
    sides = {"default": torch.cuda.Stream(), "high": torch.cuda.Stream(priority=-1)}
    result: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "calls": args.calls,
                    "connections": args.connections, "grid": drain.grid, "shared_bytes": drain.shared_bytes,
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}

    def window(body, with_drain: bool, head_cycles: int) -> float:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        if head_cycles:
            spin(head_cycles)
        start.record(cur)
        body()
        if with_drain:
            drain.launch(cur.cuda_stream)
        end.record(cur)
        end.synchronize()
        us = start.elapsed_time(end) * 1000.0
        torch.cuda.synchronize()
        return us

    def median(body, with_drain: bool, head_cycles: int) -> float:
        for _ in range(10):
            window(body, with_drain, head_cycles)
        return statistics.median(window(body, with_drain, head_cycles) for _ in range(args.calls))

    spin(20_000_000)
    launches0 = drain.launches
    # The drain's cost as the evaluator measures it (child._drain_cost): empty windows after a spin.
    cost_head = 200_000
    empty_with = median(lambda: None, True, cost_head)
    empty_without = median(lambda: None, False, cost_head)
    cost = max(0.0, empty_with - empty_without)
    result["drain_cost_us"] = round(cost, 3)
    result["empty_window_us"] = {"with_drain": round(empty_with, 3), "without": round(empty_without, 3)}
    print(f"drain: grid {drain.grid} x {drain.shared_bytes} B; cost {cost:.2f} us (empty window {empty_with:.2f} "
          f"with, {empty_without:.2f} without)", flush=True)
    print("| elements | head start | kernel, plain events (us) | drained - cost (us) | ratio | side stream: plain / "
          "drained (us), default priority | high priority |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.sizes.split(",")):
        x = torch.rand(n, device="cuda") - 0.5
        y = torch.empty_like(x)

        def own(x=x, y=y) -> None:
            torch.clamp_min(x, 0.0, out=y)

        def on_side(stream, x=x, y=y):
            def body() -> None:
                stream.wait_stream(cur)
                with torch.cuda.stream(stream):
                    torch.clamp_min(x, 0.0, out=y)
            return body

        for head in (0, 400_000):
            plain = median(own, False, head)
            drained = median(own, True, head) - cost
            row = {"elements": n, "head_start_cycles": head, "plain_us": round(plain, 3),
                   "drained_us": round(drained, 3), "ratio": round(drained / plain, 4) if plain > 0 else None}
            for name, stream in sides.items():
                row[f"side_{name}_plain_us"] = round(median(on_side(stream), False, head), 3)
                row[f"side_{name}_drained_us"] = round(median(on_side(stream), True, head) - cost, 3)
            result["rows"].append(row)
            print(f"| {n} | {head} | {plain:.2f} | {drained:.2f} | {row['ratio']} | "
                  f"{row['side_default_plain_us']:.2f} / {row['side_default_drained_us']:.2f} | "
                  f"{row['side_high_plain_us']:.2f} / {row['side_high_drained_us']:.2f} |", flush=True)
    torch.cuda.synchronize()
    launched = drain.launches - launches0
    result["launches"] = launched
    result["blocks_counted"] = drain.arrived()
    result["blocks_expected"] = drain.launches * drain.grid
    result["timeouts"] = drain.timeouts()
    print(f"launches {drain.launches}, blocks counted {result['blocks_counted']} of {result['blocks_expected']}, "
          f"timed out: {result['timeouts']}")
    args.out.write_text(json.dumps(result, indent=1))
    return 0 if result["blocks_counted"] == result["blocks_expected"] and not result["timeouts"] else 1


if __name__ == "__main__":
    sys.exit(main())
