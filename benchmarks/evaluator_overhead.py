"""(c) The fixed overhead of one evaluation beyond compile and timed device work.

With the build and baseline caches warm, an evaluation's wall time minus the time its timed calls took on the
device (n x mean of the solution's timing statistics) is the evaluator's own cost: process start, imports,
input generation, reference outputs, checks and result assembly. Target (issue 2): under 2 s.

    python benchmarks/evaluator_overhead.py --problem P.py --solution S.py --device cuda [-n 3] [--out F]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import machine, write


def timed_work_s(result: dict) -> float:
    stats = result.get("stats") or {}
    n, mean_us = stats.get("n") or 0, stats.get("mean_us") or 0.0
    return n * mean_us / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--solution", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()

    from gpu_runner.evaluate import evaluate

    problem, solution = Path(args.problem).read_text(), Path(args.solution).read_text()
    warm = evaluate(problem, solution, device=args.device)  # fills the build and baseline caches
    runs = []
    for i in range(args.n):
        t0 = time.perf_counter()
        r = evaluate(problem, solution, device=args.device, seed=7 + i)
        wall = time.perf_counter() - t0
        runs.append({"verdict": r.get("verdict"), "wall_s": round(wall, 3), "timed_work_s": round(timed_work_s(r), 3),
                     "overhead_s": round(wall - timed_work_s(r), 3)})
        print(f"run {i}: {runs[-1]}", flush=True)
    write(args.out, {
        "benchmark": "evaluator_overhead", "machine": machine(), "problem": args.problem, "device": args.device,
        "first_run_verdict": warm.get("verdict"), "first_run_wall_s": warm.get("wall_s"), "runs": runs,
        "median_overhead_s": statistics.median(r["overhead_s"] for r in runs),
    })


if __name__ == "__main__":
    os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kh-bench-cache-"))
    main()
