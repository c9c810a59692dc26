"""(b) Throughput of a batch of solutions on one GPU host, and how busy the GPU was.

C worker processes (--concurrency) evaluate the jobs of a shared queue, each with its own pool of pre-started
evaluation processes (gpu_runner.warm.WarmPool, refilled after every job), as a runner's workers do; they all
use one cache directory, so the host-wide device lock (gpu_runner/gpulock.py) keeps every timed phase alone on
the GPU while the others build, load and check on the CPU cores. Two passes over the same solutions: a cold
pass (builds, baselines: it fills the caches, and is reported too) and a warm pass (builds and baselines
cached; every job a new seed, as the site sends), each solution --repeat times, interleaved. The warm pass
takes only the solutions the cold pass got past their builds (a cold job skipped for the deadline would build
in it).

How busy the GPU was, over each pass's wall time (from its first job's start to its last job's end):
- `gpu_busy_nvml`: the mean of NVML's utilisation (the share of time a kernel was running), read every
  --sample-ms; `gpu_busy_nvml_driver` is the same from the driver's own sample buffer, where it has one. This
  is the figure for the target: GPU busy at least 80% of the wall time once builds are cached (issue 2).
- `device_held_exclusive` and `device_held_any`: the share of the wall time some evaluation held the device
  lock exclusively (timing) or at all (timing, trials, reference outputs). Upper bounds: a hold includes the
  CPU-side work done while holding it (the parent's checks of timed outputs, for one).
Each pass also says whether two exclusive holds, or an exclusive and any other hold, overlapped (they must not).

    python benchmarks/evaluator_batch.py --device cuda --concurrency 4 [--solutions S.py ...] [--repeat 2]
        [--warm-only] [--deadline-s 240] [--reserve-s 90] [--out F]
Without --solutions: every example of --track/--language (--limit N keeps the first N).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import Deadline, host, pairs, problem_for, save, stop_on_sigterm


class UtilSampler(threading.Thread):
    """NVML utilisation of one GPU every `every_s` seconds, with wall-clock times; and the driver's samples."""

    def __init__(self, every_s: float) -> None:
        super().__init__(daemon=True)
        self.every_s = every_s
        self.readings: list[tuple[float, int]] = []
        self.driver_samples: list[tuple[float, int]] = []
        self.error: str | None = None
        self.driver_error: str | None = None
        self.stop = threading.Event()

    def _handle(self, nv: Any) -> Any:
        first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
        if first.startswith(("GPU-", "MIG-")):
            return nv.nvmlDeviceGetHandleByUUID(first)
        return nv.nvmlDeviceGetHandleByIndex(int(first))

    def run(self) -> None:
        try:
            import pynvml as nv

            nv.nvmlInit()
            handle = self._handle(nv)
        except Exception as e:  # noqa: BLE001 - recorded: the report then has no NVML figure
            self.error = f"NVML unavailable: {e}"
            return
        last_seen = 0
        next_drain = 0.0
        while not self.stop.is_set():
            try:
                self.readings.append((time.time(), int(nv.nvmlDeviceGetUtilizationRates(handle).gpu)))
            except Exception as e:  # noqa: BLE001
                self.error = str(e)
            if time.monotonic() >= next_drain and self.driver_error is None:
                next_drain = time.monotonic() + 0.5
                last_seen = self._drain(nv, handle, last_seen)
            self.stop.wait(self.every_s)
        self._drain(nv, handle, last_seen)

    def _drain(self, nv: Any, handle: Any, last_seen: int) -> int:
        try:
            _, samples = nv.nvmlDeviceGetSamples(handle, nv.NVML_GPU_UTILIZATION_SAMPLES, last_seen)
        except nv.NVMLError_NotFound:  # no new sample since last_seen
            return last_seen
        except Exception as e:  # noqa: BLE001 - not every driver keeps them: the polled readings remain
            self.driver_error = str(e)
            return last_seen
        for s in samples:
            last_seen = max(last_seen, int(s.timeStamp))
            self.driver_samples.append((s.timeStamp / 1e6, int(s.sampleValue.uiVal)))
        return last_seen

    @staticmethod
    def mean_in(values: list[tuple[float, int]], start: float, end: float) -> tuple[float | None, int]:
        inside = [v for t, v in values if start <= t <= end]
        return (round(statistics.fmean(inside) / 100.0, 3) if inside else None), len(inside)


def covered_s(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Seconds of [start, end] covered by at least one of the intervals."""
    total, reach = 0.0, start
    for a, b in sorted((max(a, start), min(b, end)) for a, b in intervals):
        if b <= reach:
            continue
        total += b - max(a, reach)
        reach = b
    return total


# ----- the worker processes (spawned: CUDA is never inherited across a fork) -----

def worker_main(index: int, device: str, warm: bool, jobs: Any, results: Any) -> None:
    stop_on_sigterm()
    from gpu_runner.evaluate import evaluate

    pool = None
    try:
        if warm:
            from gpu_runner.warm import WarmPool

            pool = WarmPool(device)
            pool.refill()
        while True:
            job = jobs.get()
            if job is None:
                return
            results.put(run_job(job, index, device, pool, evaluate))
    except KeyboardInterrupt:
        return
    finally:
        if pool is not None:
            pool.close()


def run_job(job: dict, index: int, device: str, pool: Any, evaluate: Any) -> dict:
    record: dict[str, Any] = {"job": job["job"], "solution": job["solution"], "problem": job["problem"],
                              "seed": job["seed"], "worker": index}
    if time.time() > job["start_by"]:
        return {**record, "skipped": "deadline"}
    started = time.time()
    try:
        r = evaluate(Path(job["problem"]).read_text(), Path(job["solution"]).read_text(), device=device,
                     seed=job["seed"], pool=pool)
    except Exception as e:  # noqa: BLE001 - an evaluator error is a result of this benchmark too
        return {**record, "verdict": "evaluator_error", "message": str(e)[:500], "started_at": started,
                "ended_at": time.time()}
    ended = time.time()
    if pool is not None:
        pool.refill()  # as a runner's worker does after each job: the next job's processes import torch now
    stats, checks = r.get("stats") or {}, r.get("checks") or {}
    base = r.get("baselines") or {}
    return {**record, "verdict": r.get("verdict"), "runtime_us": r.get("runtime_us"), "eager_us": r.get("eager_us"),
            "speedup_vs_eager": r.get("speedup_vs_eager"), "wall_s": round(ended - started, 2),
            "started_at": started, "ended_at": ended,
            "timed_work_s": round((stats.get("n") or 0) * (stats.get("mean_us") or 0.0) / 1e6, 3),
            "builds_cached": [b.get("cached") for b in checks.get("builds") or []],
            "baselines_cached": all((base.get(m) or {}).get("cached") for m in ("eager", "compile")),
            "prestarted": checks.get("prestarted"), "stage_seconds": r.get("stage_seconds"),
            "message": str(r.get("message") or "")[:300], "device_lock": checks.get("device_lock", [])}


# ----- the parent -----

def busy(start: float, end: float, holds: list[tuple[str, dict]], sampler: UtilSampler | None) -> dict:
    wall = max(end - start, 1e-9)
    exclusive = [(h["held_from"], h["held_until"]) for _, h in holds if not h.get("shared")]
    out: dict[str, Any] = {
        "device_held_exclusive": round(covered_s(exclusive, start, end) / wall, 3),
        "device_held_any": round(covered_s([(h["held_from"], h["held_until"]) for _, h in holds], start, end) / wall,
                                 3)}
    if sampler is not None:
        out["gpu_busy_nvml"], out["nvml_readings"] = sampler.mean_in(sampler.readings, start, end)
        out["gpu_busy_nvml_driver"], out["nvml_driver_samples"] = sampler.mean_in(sampler.driver_samples, start, end)
    return out


def pass_report(name: str, results: list[dict], sampler: UtilSampler | None, stopped: str) -> dict:
    ran = [r for r in results if "started_at" in r]
    out: dict[str, Any] = {"pass": name, "jobs": len(results), "evaluated": len(ran),
                           "skipped": sum(1 for r in results if r.get("skipped")), "stopped": stopped,
                           "verdicts": {v: sum(1 for r in ran if r.get("verdict") == v)
                                        for v in sorted({str(r.get("verdict")) for r in ran})}}
    if not ran:
        return {**out, "results": results}
    start, end = min(r["started_at"] for r in ran), max(r["ended_at"] for r in ran)
    wall = max(end - start, 1e-9)
    holds = [(r["job"], h) for r in ran for h in r.get("device_lock") or [] if h.get("held_until")]
    overlapped = any(a[0] != b[0] and (not a[1].get("shared") or not b[1].get("shared"))
                     and a[1]["held_from"] < b[1]["held_until"] and b[1]["held_from"] < a[1]["held_until"]
                     for a in holds for b in holds)
    out.update({
        "wall_s": round(wall, 1), "per_hour": round(3600 * len(ran) / wall, 1),
        "lock_wait_s": round(sum(h["waited_s"] for _, h in holds), 1),
        "timed_work_s": round(sum(r.get("timed_work_s") or 0.0 for r in ran), 1),
        "locked_phases_overlapped": overlapped,
        **busy(start, end, holds, sampler),
    })
    # Until the last job started, every worker had a job (more waited): the batch's steady state, without the
    # tail where the last evaluations run with fewer beside them.
    last_start = max(r["started_at"] for r in ran)
    if last_start - start >= 5:
        out["steady"] = {"seconds": round(last_start - start, 1), **busy(start, last_start, holds, sampler)}
    if sampler is not None:
        out["nvml_errors"] = [e for e in (sampler.error, sampler.driver_error) if e] or None
        if sampler.driver_samples:  # their clock is the driver's: shows whether the window filter fits it
            out["nvml_driver_span_s"] = [round(sampler.driver_samples[0][0] - start, 1),
                                         round(sampler.driver_samples[-1][0] - start, 1)]
    return {**out, "results": results}


def run_pass(name: str, items: list[tuple[Path, Path]], *, repeat: int, seed0: int, start_by: float,
             jobs: Any, results: Any, workers: list[Any], sampler: UtilSampler | None,
             on_result: Any) -> dict:
    batch = [{"job": f"{name}-{k}-{i}", "problem": str(p), "solution": str(s), "seed": seed0 + k * len(items) + i,
              "start_by": start_by}
             for k in range(repeat) for i, (p, s) in enumerate(items)]
    for job in batch:
        jobs.put(job)
    done: list[dict] = []
    stopped = "finished"
    try:
        while len(done) < len(batch):
            try:
                done.append(results.get(timeout=1.0))
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    stopped = "every worker process died"
                    break
                continue
            r = done[-1]
            print(f"{name}: {Path(r['solution']).name} seed {r['seed']}: {r.get('skipped') or r.get('verdict')} "
                  f"wall {r.get('wall_s')} s runtime {r.get('runtime_us')} us {r.get('message', '')[:120]}",
                  flush=True)
            on_result(pass_report(name, done, sampler, "running"))
    except KeyboardInterrupt as e:
        stopped = f"interrupted ({e})"
        raise
    finally:
        on_result(pass_report(name, done, sampler, stopped))
    return pass_report(name, done, sampler, stopped)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--solutions", nargs="*", default=None, help="example solutions (problems found by name)")
    ap.add_argument("--track", default="gpu")
    ap.add_argument("--language", default="cuda")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1, help="warm pass: evaluations of each solution (new seeds)")
    ap.add_argument("--cold-processes", action="store_true", help="no pre-started processes (a runner with "
                    "KERNELHUB_PRESTART=false)")
    ap.add_argument("--warm-only", action="store_true", help="skip the cold pass (caches already filled)")
    ap.add_argument("--sample-ms", type=float, default=25.0, help="NVML reading interval (default 25 ms)")
    ap.add_argument("--deadline-s", type=float, default=None, help="start no job after this (see --reserve-s)")
    ap.add_argument("--reserve-s", type=float, default=90.0,
                    help="the cold pass starts no job when fewer seconds than this are left (kept for the warm pass)")
    ap.add_argument("--min-left-s", type=float, default=30.0, help="the warm pass starts no job with less left")
    ap.add_argument("--out")
    args = ap.parse_args()
    deadline = Deadline(args.deadline_s)
    stop_on_sigterm()
    if args.solutions:
        items = [(problem_for(Path(s)), Path(s).resolve()) for s in args.solutions]
    else:
        items = pairs(args.track, args.language)
    if args.limit:
        items = items[: args.limit]
    if not items:
        raise SystemExit("no solutions: pass --solutions or a --track/--language with examples")
    wall_end = time.time() + min(deadline.left(), 10 ** 9)
    report: dict[str, Any] = {
        "benchmark": "evaluator_batch", "machine": host(args.device), "device": args.device,
        "concurrency": args.concurrency, "prestarted_processes": not args.cold_processes, "repeat": args.repeat,
        "solutions": [str(s) for _, s in items], "complete": False}

    def keep(pass_data: dict) -> None:
        report[pass_data["pass"]] = pass_data
        save(args.out, report)

    ctx = mp.get_context("spawn")
    jobs, results = ctx.Queue(), ctx.Queue()
    workers = [ctx.Process(target=worker_main, args=(i, args.device, not args.cold_processes, jobs, results))
               for i in range(args.concurrency)]
    for w in workers:
        w.start()
    sampler = UtilSampler(args.sample_ms / 1000.0) if args.device == "cuda" else None
    if sampler:
        sampler.start()
    stopped = "finished"
    try:
        if not args.warm_only:
            cold = run_pass("cold", items, repeat=1, seed0=100, start_by=wall_end - args.reserve_s, jobs=jobs,
                            results=results, workers=workers, sampler=sampler, on_result=keep)
            if cold["stopped"] != "finished":
                raise KeyboardInterrupt(cold["stopped"])
            # Only what the cold pass evaluated past its builds: a build in the warm pass would not be "builds
            # cached". (A solution rejected there stays in: its verdicts are in the report, and a figure with
            # them says more than none.)
            built = {r["solution"] for r in cold["results"]
                     if r.get("verdict") not in (None, "compile_error", "evaluator_error")}
            report["warm_left_out"] = [str(s) for _, s in items if str(s) not in built]
            items = [(p, s) for p, s in items if str(s) in built]
            if not items:
                raise KeyboardInterrupt("the cold pass built no solution")
        warm = run_pass("warm", items, repeat=args.repeat, seed0=200, start_by=wall_end - args.min_left_s,
                        jobs=jobs, results=results, workers=workers, sampler=sampler, on_result=keep)
        if warm["stopped"] != "finished":
            stopped = warm["stopped"]
    except KeyboardInterrupt as e:
        stopped = f"stopped ({e})"
    finally:
        for _ in workers:
            jobs.put(None)
        for w in workers:
            w.join(timeout=5 if stopped == "finished" else 0.1)
        for w in workers:
            if w.is_alive():
                w.terminate()  # SIGTERM: its evaluation and pool close their children
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
        if sampler:
            sampler.stop.set()
            sampler.join(timeout=5)
        report["complete"] = stopped == "finished"
        report["stopped"] = stopped
        save(args.out, report)
        parts = []
        for name in ("cold", "warm"):
            p = report.get(name)
            if p:
                parts.append(f"{name}: {p['evaluated']}/{p['jobs']} evaluated {p['verdicts']} in {p.get('wall_s')} s, "
                             f"GPU busy (NVML) {p.get('gpu_busy_nvml')}, lock held exclusive "
                             f"{p.get('device_held_exclusive')} / any {p.get('device_held_any')}, "
                             f"overlap {p.get('locked_phases_overlapped')}")
        print(f"SUMMARY batch {args.device} x{args.concurrency}: " + "; ".join(parts) + f"; {stopped}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("KERNELHUB_CACHE_DIR", tempfile.mkdtemp(prefix="kh-bench-cache-"))
    main()
