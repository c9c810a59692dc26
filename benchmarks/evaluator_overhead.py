"""(c) The fixed overhead of one evaluation beyond compile and timed device work.

With the build and baseline caches warm (a first evaluation fills them and is reported apart), an evaluation's
wall time minus the time its timed calls took on the device (n x mean of the solution's timing statistics) is
the evaluator's own cost: process start, imports, input generation, reference outputs, checks, the timing
loop's own work (cache flushes, poisoning, checked outputs) and result assembly. Target (issue 2): under 2 s.
`overhead_outside_timing_s` (wall minus the whole timing stage) says how much lies outside the timing loop.

--warm measures a runner's path: the evaluations take pre-started processes from a gpu_runner.warm.WarmPool,
refilled after each one, with --gap seconds between jobs for the new processes to import torch (a runner
posts its result and takes the next job meanwhile). Each run's `stage_seconds` says where its time went.
Without --warm every process starts cold, but evaluate() is called in this process, where torch is already
imported: the CLI's own start (Python and torch in `python -m gpu_runner evaluate`) is not in the figure.

    python benchmarks/evaluator_overhead.py --solution S.py [--problem P.py] --device cuda [-n 3] [--warm]
        [--gap 5] [--same-seed] [--skip-fill] [--deadline-s 120] [--out F]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _common import Deadline, host, problem_for, save, stop_on_sigterm

TARGET_S = 2.0


def timed_work_s(result: dict) -> float:
    stats = result.get("stats") or {}
    n, mean_us = stats.get("n") or 0, stats.get("mean_us") or 0.0
    return n * mean_us / 1e6


def run_record(r: dict, wall: float) -> dict:
    stages = r.get("stage_seconds") or {}
    base = r.get("baselines") or {}
    record = {"verdict": r.get("verdict"), "wall_s": round(wall, 3), "timed_work_s": round(timed_work_s(r), 3),
              "overhead_s": round(wall - timed_work_s(r), 3),
              "overhead_outside_timing_s": round(wall - stages.get("timing", 0.0), 3),
              "runtime_us": r.get("runtime_us"), "builds": (r.get("checks") or {}).get("builds"),
              "baselines_cached": all((base.get(m) or {}).get("cached") for m in ("eager", "compile")),
              "stage_seconds": stages, "prestarted": (r.get("checks") or {}).get("prestarted"),
              "reference_trials_cached": (r.get("checks") or {}).get("reference_trials_cached")}
    if r.get("verdict") != "accepted":
        record.update({"rule": r.get("rule"), "message": str(r.get("message"))[:500]})
    return record


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", help="default: the bundled problem of the same name as the solution")
    ap.add_argument("--solution", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--warm", action="store_true", help="pre-started processes, as a runner's worker uses them")
    ap.add_argument("--same-seed", action="store_true", help="every run with the first run's seed (a re-run)")
    ap.add_argument("--gap", type=float, default=20.0, help="--warm: idle seconds between jobs (default 20)")
    ap.add_argument("--skip-fill", action="store_true", help="no first evaluation to fill the caches (an earlier "
                    "step filled them; each run's `builds` and `baselines_cached` show whether they were)")
    ap.add_argument("--deadline-s", type=float, default=None, help="start no run that would end after this")
    args = ap.parse_args()
    deadline = Deadline(args.deadline_s)
    stop_on_sigterm()

    from gpu_runner.evaluate import evaluate

    problem_path = Path(args.problem) if args.problem else problem_for(Path(args.solution))
    problem, solution = problem_path.read_text(), Path(args.solution).read_text()
    report: dict = {"benchmark": "evaluator_overhead", "machine": host(args.device), "problem": str(problem_path),
                    "solution": args.solution, "device": args.device, "mode": "warm" if args.warm else "cold",
                    "gap_s": args.gap if args.warm else None, "same_seed": args.same_seed, "complete": False,
                    "first_run": None, "runs": []}
    pool = None
    stopped = "finished"
    try:
        if args.warm:
            from gpu_runner.warm import WarmPool

            pool = WarmPool(args.device)
            pool.refill()
        if not args.skip_fill:
            t0 = time.perf_counter()
            # Fills the build and baseline caches (and, warm, the pool's reference outputs for the seed).
            first = evaluate(problem, solution, device=args.device, seed=7, pool=pool)
            report["first_run"] = run_record(first, time.perf_counter() - t0)
            save(args.out, report)
            print(f"first run (fills the caches): {report['first_run']}", flush=True)
        for i in range(args.n):
            last_wall = max([r["wall_s"] for r in report["runs"]]
                            or [(report["first_run"] or {}).get("wall_s") or 20.0])
            gap = args.gap if pool is not None else 0.0
            if not deadline.allows(gap + 1.2 * last_wall):
                stopped = f"deadline: {deadline.left():.0f} s left before run {i}"
                break
            if pool is not None:
                pool.refill()
                time.sleep(gap)
            t0 = time.perf_counter()
            # A new seed each run, as the site sends; --same-seed: a re-run, whose trial outputs the pool kept.
            r = evaluate(problem, solution, device=args.device, seed=7 if args.same_seed else 8 + i, pool=pool)
            report["runs"].append(run_record(r, time.perf_counter() - t0))
            save(args.out, report)
            print(f"run {i}: {report['runs'][-1]}", flush=True)
    except KeyboardInterrupt as e:
        stopped = f"interrupted ({e})"
    finally:
        if pool is not None:
            pool.close()
        runs = [r for r in report["runs"] if r["verdict"] == "accepted"]
        report["median_wall_s"] = statistics.median(r["wall_s"] for r in runs) if runs else None
        report["median_overhead_s"] = statistics.median(r["overhead_s"] for r in runs) if runs else None
        report["median_overhead_outside_timing_s"] = (
            statistics.median(r["overhead_outside_timing_s"] for r in runs) if runs else None)
        report["target"] = (None if not runs else
                            f"overhead under {TARGET_S:.0f} s: " + ("met" if report["median_overhead_s"] < TARGET_S
                                                                    else "not met"))
        report["complete"] = stopped == "finished"
        report["stopped"] = stopped
        save(args.out, report)
        print(f"SUMMARY overhead {args.device} {report['mode']} {Path(args.solution).name}: {len(runs)}/{args.n} "
              f"accepted, median wall {report['median_wall_s']} s, median overhead {report['median_overhead_s']} s "
              f"(outside the timing stage {report['median_overhead_outside_timing_s']} s), first run "
              f"{(report['first_run'] or {}).get('wall_s')} s; {stopped}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kh-bench-cache-"))
    main()
