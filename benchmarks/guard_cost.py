"""What the solution's per-call guard (gpu_runner.guards.forward_guard) costs on the host, before and after the
process-wide guards are installed, and piece by piece.

The clock audit (gpu_runner/timing.py) takes a call's own time as its request's wall time less a trusted null
call's, and the null call runs the same forward_guard in a process where the process-wide guards (the audit hook,
the watched identities) are not installed. Whatever installing them adds to each call is charged to the solution
as if it were its kernel's time; only CLOCK_SLACK_US and HARNESS_SHARE cover it. This prints, per call:
- the whole guard around an empty forward, not installed (the null call's side) and installed (the solution's);
- the same around a forward that allocates its output (one allowed op through the dispatcher, as a C++
  extension's torch::empty_like does);
- its pieces: the watched identities' snapshot, the thread listing, the checks after forward.

    python benchmarks/guard_cost.py [--device cpu|cuda] [--calls 2000] [--out F.json]

It runs in one process, in the order above: installing cannot be undone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from _common import machine


def per_call_us(fn: Callable[[], Any], calls: int) -> dict[str, float]:
    for _ in range(min(100, calls)):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    return {"median_us": round(statistics.median(times), 2), "p90_us": round(times[int(0.9 * len(times))], 2)}


def measure(guards: Any, torch: Any, device: str, calls: int) -> dict[str, dict[str, float]]:
    policy = {"record_ops": False}
    x = torch.ones(1024, device=device)

    def empty() -> None:
        with guards.forward_guard(policy):
            pass

    def allocating() -> None:
        with guards.forward_guard(policy):
            torch.empty_like(x)

    return {
        "guard around an empty forward": per_call_us(empty, calls),
        "guard around one allocation": per_call_us(allocating, calls),
        "watched identities' snapshot": per_call_us(guards._snapshot_watched, calls),
        "thread listing (/proc/self/task)": per_call_us(guards._native_threads, calls),
        "checks after forward": per_call_us(lambda: guards._after_forward({}, set()), calls),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import torch

    from gpu_runner import guards

    if args.device == "cuda":
        torch.cuda.init()
    # Read before install: the installed guards refuse starting programs (platform's uname, nproc) and writing
    # outside the working directory, as they do in the solution's process.
    host = machine()
    out = open(args.out, "w") if args.out else None  # noqa: SIM115 - written once the figures are in
    before = measure(guards, torch, args.device, args.calls)
    guards.install_process_guards()
    after = measure(guards, torch, args.device, args.calls)
    rows = {name: {"not_installed": before[name], "installed": after[name],
                   "installed_extra_us": round(after[name]["median_us"] - before[name]["median_us"], 2)}
            for name in before}
    text = json.dumps({"machine": host, "device": args.device, "calls": args.calls, "per_call": rows}, indent=2)
    print(text)
    if out is not None:
        out.write(text)
        out.close()


if __name__ == "__main__":
    main()
