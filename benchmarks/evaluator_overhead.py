"""(c) The fixed overhead of one evaluation beyond compile and timed device work.

With the build and baseline caches warm, an evaluation's wall time minus the time its timed calls took on the
device (n x mean of the solution's timing statistics) is the evaluator's own cost: process start, imports,
input generation, reference outputs, checks and result assembly. Target (issue 2): under 2 s.

--warm measures a runner's path: the evaluations take pre-started processes from a gpu_runner.warm.WarmPool,
refilled after each one, with --gap seconds between jobs for the new processes to import torch (a runner
posts its result and takes the next job meanwhile). Each run's `stage_seconds` says where its time went.

    python benchmarks/evaluator_overhead.py --problem P.py --solution S.py --device cuda [-n 3] [--warm]
        [--same-seed] [--out F]
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
    ap.add_argument("--warm", action="store_true", help="pre-started processes, as a runner's worker uses them")
    ap.add_argument("--same-seed", action="store_true", help="every run with the first run's seed (a re-run)")
    ap.add_argument("--gap", type=float, default=20.0, help="--warm: idle seconds between jobs (default 20)")
    args = ap.parse_args()

    from gpu_runner.evaluate import evaluate

    pool = None
    if args.warm:
        from gpu_runner.warm import WarmPool

        pool = WarmPool(args.device)
        pool.refill()
    problem, solution = Path(args.problem).read_text(), Path(args.solution).read_text()
    try:
        # Fills the build and baseline caches (and, warm, the pool's reference outputs for the seed).
        first = evaluate(problem, solution, device=args.device, seed=7, pool=pool)
        runs = []
        for i in range(args.n):
            if pool is not None:
                pool.refill()
                time.sleep(args.gap)
            t0 = time.perf_counter()
            # A new seed each run, as the site sends; --same-seed: a re-run, whose trial outputs the pool kept.
            r = evaluate(problem, solution, device=args.device, seed=7 if args.same_seed else 8 + i, pool=pool)
            wall = time.perf_counter() - t0
            runs.append({"verdict": r.get("verdict"), "wall_s": round(wall, 3),
                         "timed_work_s": round(timed_work_s(r), 3), "overhead_s": round(wall - timed_work_s(r), 3),
                         "stage_seconds": r.get("stage_seconds"), "prestarted": r["checks"].get("prestarted")})
            if r.get("verdict") != "accepted":
                runs[-1].update({"rule": r.get("rule"), "message": str(r.get("message"))[:500]})
            print(f"run {i}: {runs[-1]}", flush=True)
    finally:
        if pool is not None:
            pool.close()
    write(args.out, {
        "benchmark": "evaluator_overhead", "machine": machine(), "problem": args.problem, "device": args.device,
        "mode": "warm" if args.warm else "cold", "gap_s": args.gap if args.warm else None,
        "same_seed": args.same_seed,
        "first_run_verdict": first.get("verdict"), "first_run_wall_s": first.get("wall_s"), "runs": runs,
        "median_overhead_s": statistics.median(r["overhead_s"] for r in runs),
    })


if __name__ == "__main__":
    os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kh-bench-cache-"))
    main()
