"""Evaluates example solutions through the CLI, several at once, and appends one JSON line per result as each
finishes (so a run cut short by its time limit still returns what it did). scripts/gpu/run_examples.sh runs it.

    python3 scripts/gpu/examples.py OUT.jsonl [--device cuda] [--parallel 4] [--deadline-s 400] [GLOB ...]
Evaluations run concurrently share the GPU: their verdicts count, their timings are not reported.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("globs", nargs="*", default=["examples/gpu/*/*.py"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--deadline-s", type=float, default=400)
    ap.add_argument("--gpus", default="", help="comma-separated GPU indices: each evaluation gets one to itself "
                    "(CUDA_VISIBLE_DEVICES), and --parallel becomes the number of GPUs")
    args = ap.parse_args()
    solutions = sorted({p for g in args.globs for p in REPO.glob(g)})
    end = time.monotonic() + args.deadline_s
    lock = threading.Lock()
    free_gpus: queue.Queue[str] = queue.Queue()
    gpus = [g for g in args.gpus.split(",") if g.strip()]
    for g in gpus:
        free_gpus.put(g.strip())
    if gpus:
        args.parallel = len(gpus)

    def one(solution: Path) -> None:
        track = "cpu" if "/cpu/" in str(solution) else "gpu"
        problems = list((REPO / "problems" / track).glob(f"level*/{solution.name}"))
        left = end - time.monotonic()
        row = {"solution": str(solution.relative_to(REPO))}
        if not problems:
            row["error"] = "no problem"
        elif left < 30:
            row["error"] = "skipped: deadline"
        else:
            t0 = time.monotonic()
            gpu = free_gpus.get() if gpus else None
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu) if gpu is not None else None
            row["gpu"] = gpu
            try:
                proc = subprocess.run([sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(problems[0]),
                                       "--solution", str(solution), "--device", args.device, "--json"],
                                      capture_output=True, text=True, timeout=left, cwd=REPO, env=env)
                row["rc"] = proc.returncode
                try:
                    row["result"] = json.loads(proc.stdout)
                except ValueError:
                    row["stdout_tail"] = proc.stdout[-2000:]
                row["stderr_tail"] = proc.stderr[-1500:]
            except subprocess.TimeoutExpired:
                row["error"] = "deadline reached while evaluating"
            finally:
                if gpu is not None:
                    free_gpus.put(gpu)
            row["wall_s"] = round(time.monotonic() - t0, 1)
        with lock:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            r = row.get("result") or {}
            print(f"{row['solution']}: {r.get('verdict') or row.get('error')} {str(r.get('message', ''))[:160]}",
                  flush=True)

    with ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(one, solutions))


if __name__ == "__main__":
    main()
