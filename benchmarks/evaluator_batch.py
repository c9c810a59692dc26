"""(b) Throughput of a batch of solutions on one GPU host, and the GPU's idle fraction.

Runs every example of a track through `evaluate()` with C concurrent evaluations: builds (CPU cores) overlap
with other evaluations' GPU work, while the host-wide device lock (gpu_runner/gpulock.py) lets only one of them
time on the GPU at a time. Each result says how long it waited for the lock; each pass, the total wait and
whether any two locked phases overlapped (they must not). NVML's utilisation counter (share of time a kernel was running) is sampled
every 100 ms over the whole batch. Target (issue 2): GPU busy >= 80% of the wall time once builds are cached,
so the script runs the batch twice: a cold pass (builds happen) and a warm pass (builds cached, baselines cached).

    python benchmarks/evaluator_batch.py --track gpu --language cuda --concurrency 4 [--out F]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from _common import machine, pairs, write


class UtilSampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        while not self.stop.is_set():
            self.samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            time.sleep(0.1)


def run_pass(items, device: str, concurrency: int) -> dict:
    from gpu_runner.evaluate import evaluate

    sampler = UtilSampler() if device == "cuda" else None
    if sampler:
        sampler.start()
    t0 = time.perf_counter()

    def one(item):
        problem, solution = item
        s = time.perf_counter()
        r = evaluate(problem.read_text(), solution.read_text(), device=device)
        return {"problem": problem.stem, "verdict": r.get("verdict"), "runtime_us": r.get("runtime_us"),
                "eager_us": r.get("eager_us"), "speedup_vs_eager": r.get("speedup_vs_eager"),
                "wall_s": round(time.perf_counter() - s, 2), "message": (r.get("message") or "")[:300],
                "device_lock": r.get("checks", {}).get("device_lock", [])}

    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, items))
    wall = time.perf_counter() - t0
    # An exclusive (timed) hold must overlap no hold of another evaluation; shared holds may overlap each other.
    holds = [(i, h) for i, r in enumerate(results) for h in r["device_lock"]]
    overlapped = any(a[0] != b[0] and (not a[1].get("shared") or not b[1].get("shared"))
                     and a[1]["held_from"] < b[1]["held_until"] and b[1]["held_from"] < a[1]["held_until"]
                     for a in holds for b in holds)
    out = {"wall_s": round(wall, 1), "evaluations": len(items), "per_hour": round(3600 * len(items) / wall, 1),
           "lock_wait_s": round(sum(h["waited_s"] for r in results for h in r["device_lock"]), 1),
           "locked_phases_overlapped": overlapped,
           "results": results}
    if sampler:
        sampler.stop.set()
        sampler.join()
        out["gpu_busy_fraction"] = round(sum(sampler.samples) / (100.0 * max(1, len(sampler.samples))), 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--track", default="gpu")
    ap.add_argument("--language", default="cuda")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--warm-only", action="store_true", help="skip the cold pass (caches already filled)")
    ap.add_argument("--out")
    args = ap.parse_args()
    items = pairs(args.track, args.language)
    if args.limit:
        items = items[: args.limit]
    report = {"benchmark": "evaluator_batch", "machine": machine(), "concurrency": args.concurrency}
    if not args.warm_only:
        report["cold"] = run_pass(items, args.device, args.concurrency)
    report["warm"] = run_pass(items, args.device, args.concurrency)
    write(args.out, report)


if __name__ == "__main__":
    os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kh-bench-cache-"))
    main()
