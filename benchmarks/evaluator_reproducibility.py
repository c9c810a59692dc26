"""(a) Run-to-run reproducibility: one kernel evaluated N times, each time with its baselines measured afresh.

Reports the coefficient of variation (std/mean) of runtime_us, eager_us and speedup_vs_eager. By default the
baselines are measured once and re-used, as the evaluator does in service; --fresh-baselines measures them
again for every run (torch.compile then compiles again each time).
Target (issue 2): CV of the speedup at most 1% for kernels of 100 us or more.

    python benchmarks/evaluator_reproducibility.py --problem P.py --solution S.py --device cuda [-n 5] [--out F]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from _common import machine, write


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--solution", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--fresh-baselines", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()

    from gpu_runner import sandbox
    from gpu_runner.evaluate import evaluate

    problem, solution = Path(args.problem).read_text(), Path(args.solution).read_text()
    runs = []
    for i in range(args.n):
        if args.fresh_baselines:
            # The build cache stays: compile time is not what is measured here.
            shutil.rmtree(sandbox.cache_dir() / "baselines", ignore_errors=True)
        r = evaluate(problem, solution, device=args.device, seed=1000 + i)
        runs.append({k: r.get(k) for k in ("verdict", "runtime_us", "eager_us", "compile_us",
                                            "speedup_vs_eager", "speedup_vs_compile", "wall_s")})
        print(f"run {i}: {runs[-1]}", flush=True)

    def cv(key: str) -> float | None:
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        if len(values) < 2:
            return None
        return statistics.stdev(values) / statistics.mean(values)

    write(args.out, {
        "benchmark": "evaluator_reproducibility", "machine": machine(), "problem": args.problem,
        "solution": args.solution, "device": args.device, "fresh_baselines": args.fresh_baselines, "runs": runs,
        "cv_runtime": cv("runtime_us"), "cv_eager": cv("eager_us"), "cv_speedup_vs_eager": cv("speedup_vs_eager"),
        "cv_speedup_vs_compile": cv("speedup_vs_compile"),
    })


if __name__ == "__main__":
    os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kh-bench-cache-"))
    main()
