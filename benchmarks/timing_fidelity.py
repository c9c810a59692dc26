"""Timing fidelity: does the evaluator report the kernel's time, and not its own?

For each case (a problem and an honest solution, from about 10 us to a few ms, some of them KernelBench level 1's
own problems at their own sizes), in the same run:
- the plain measurement, in a clean process with no evaluator in it: CUDA events recorded right around forward,
  the L2 flushed before each call (the evaluator's flush: a 256 MiB buffer zeroed, as Triton's do_bench does, or
  twice the L2 where that is larger), a synchronise after each call, the median of PLAIN_CALLS calls after
  warm-up (what KernelBench and Triton's do_bench do); and the PyTorch
  profiler's summed device time per call (5 warm-ups, 10 calls: CUDA Agent's measure);
- the evaluator, `python -m gpu_runner evaluate --json`, for the solution and both baselines;
then a table of plain event time, evaluator time, their ratio and the profiler kernel times, for eager, compile
and the solution. The acceptance figure is the ratio: within 5%, or 3 us for short kernels.

    python benchmarks/timing_fidelity.py --device cuda --kernelbench ../shared/data/kernelbench/KernelBench \
        --out results.json
    python benchmarks/timing_fidelity.py plain --problem P --solution S --device cuda   # one plain measurement

Both sides take the host's device lock (gpu_runner/gpulock.py) while they time, so the plain measurements and
the evaluator's timed phases never overlap; builds and loads run side by side. On a CPU (`--device cpu`, a
rehearsal) the plain side times with perf_counter and there is no profiler figure.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HERE = Path(__file__).resolve().parent / "fidelity"
PLAIN_CALLS, PLAIN_WARMUP = 200, 10
PROFILE_WARMUP, PROFILE_CALLS = 5, 10
TOLERANCE, TOLERANCE_US = 0.05, 3.0

# (name, problem, solution, how many may run beside it). Problems "kb:" come from a KernelBench checkout.
GPU_CASES = [
    ("add_small (KernelBench's example size)", "fidelity/add_small.py", "fidelity/add_small_solution.py"),
    ("row_mean 8192x8192", "fidelity/row_mean.py", "fidelity/row_mean_solution.py"),
    ("relu_scale_bias 4096x16384", "fidelity/relu_scale_bias.py", "fidelity/relu_scale_bias_solution.py"),
    ("KB level1/88_MinGPTNewGelu", "kb:level1/88_MinGPTNewGelu.py", "fidelity/kb_88_mingpt_new_gelu_solution.py"),
    ("softmax_rows (bundled)", "repo:problems/gpu/level1/softmax_rows.py", "repo:examples/gpu/cuda/softmax_rows.py"),
    ("matmul_square (bundled)", "repo:problems/gpu/level1/matmul_square.py", "repo:examples/gpu/cuda/matmul_square.py"),
    ("KB level1/5_Matrix_scalar_multiplication", "kb:level1/5_Matrix_scalar_multiplication.py",
     "fidelity/kb_5_matrix_scalar_solution.py"),
]
CPU_CASES = [
    ("gelu_erf (bundled, CPU)", "repo:problems/cpu/level1/gelu_erf_cpu.py", "repo:examples/cpu/cpp/gelu_erf_cpu.py"),
]


def resolve(spec: str, kernelbench: Path | None) -> Path:
    if spec.startswith("kb:"):
        if kernelbench is None:
            raise SystemExit(f"{spec} needs --kernelbench (a KernelBench checkout's KernelBench/ folder)")
        return kernelbench / spec[3:]
    if spec.startswith("repo:"):
        return REPO / spec[5:]
    return Path(__file__).resolve().parent / spec


# ----- the plain measurement (a clean process) -----
def _import(path: Path, name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _inputs(problem, device: str, seed: int):  # type: ignore[no-untyped-def]
    import torch

    torch.manual_seed(seed)
    if device == "cuda":
        with torch.device("cuda"):
            xs = list(problem.get_inputs())
    else:
        xs = list(problem.get_inputs())
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


def _event_median(fn, inputs, device: str, flush, host: list | None = None) -> float:  # type: ignore[no-untyped-def]
    """The median event time; `host` (a list) receives the median host time spent in forward."""
    import torch

    with torch.no_grad():
        for _ in range(PLAIN_WARMUP):
            fn(*inputs)
        times, host_times = [], []
        for _ in range(PLAIN_CALLS):
            if device == "cuda":
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                flush.zero_()
                start.record()
                h0 = time.perf_counter()
                fn(*inputs)
                host_times.append((time.perf_counter() - h0) * 1e6)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end) * 1000.0)
            else:
                flush.zero_()
                t0 = time.perf_counter()
                fn(*inputs)
                times.append((time.perf_counter() - t0) * 1e6)
    if host is not None and host_times:
        host.append(statistics.median(host_times))
    return statistics.median(times)


def _window_breakdown(fn, inputs, flush) -> dict:
    """Where a harness's time inside the window goes, for the solution (CUDA): the medians of the same calls
    timed as the plain measurement does and as the evaluator before 1.2.0 did, with and without its guard.
    - plain: synchronise, flush, start, forward, end, synchronise;
    - old_no_guard: flush, synchronise, start, forward, device-wide synchronise, end (evaluator 1.1.0's window);
    - old_guard: the same inside the guard (its dispatch mode and ITT ranges during forward);
    - old_guard_recorded: the same on a call the guard's op record runs on;
    - new_guard: the guard entered, flush, start, forward, end, then the synchronise (evaluator 1.2.0)."""
    import torch

    from gpu_runner import guards

    def run(variant: str) -> float:
        times = []
        for i in range(PLAIN_CALLS + PLAIN_WARMUP):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            if variant == "plain":
                flush.zero_()
                start.record()
                fn(*inputs)
                end.record()
            elif variant.startswith("old"):
                flush.zero_()
                torch.cuda.synchronize()
                policy = {"record_ops": variant == "old_guard_recorded"}
                with guards.forward_guard(policy) if variant != "old_no_guard" else _nothing():
                    start.record()
                    fn(*inputs)
                    torch.cuda.synchronize()
                    end.record()
            else:
                with guards.forward_guard({"record_ops": False}):
                    flush.zero_()
                    start.record()
                    fn(*inputs)
                    end.record()
                    torch.cuda.synchronize()
            torch.cuda.synchronize()
            if i >= PLAIN_WARMUP:
                times.append(start.elapsed_time(end) * 1000.0)
        return statistics.median(times)

    with torch.no_grad():
        return {v: run(v) for v in ("plain", "old_no_guard", "old_guard", "old_guard_recorded", "new_guard")}


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _profiled_us(fn, inputs) -> float:  # type: ignore[no-untyped-def]
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        for _ in range(PROFILE_WARMUP):
            fn(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(PROFILE_CALLS):
                fn(*inputs)
            torch.cuda.synchronize()
    return sum(float(getattr(e, "self_device_time_total", 0.0) or 0.0) for e in prof.key_averages()) / PROFILE_CALLS


def load_models(problem_path: Path, solution_path: Path, device: str, prefix: str):  # type: ignore[no-untyped-def]
    """(problem module, Model, ModelNew) as the evaluator builds them: the same seed before each, and ModelNew
    given the reference's parameters by name and shape."""
    import torch

    problem = _import(problem_path, f"{prefix}_problem")
    init = list(problem.get_init_inputs())
    torch.manual_seed(0)
    model = problem.Model(*init).to(device)
    solution = _import(solution_path, f"{prefix}_solution")
    torch.manual_seed(0)
    model_new = solution.ModelNew(*init).to(device)
    reference = dict(model.state_dict())
    own = model_new.state_dict()
    model_new.load_state_dict({k: reference[k] if k in reference and reference[k].shape == v.shape else v
                               for k, v in own.items()})
    return problem, model, model_new


def plain(problem_path: Path, solution_path: Path, device: str) -> dict:
    import torch

    from gpu_runner import gpulock

    problem, model, model_new = load_models(problem_path, solution_path, device, "fidelity")
    compiled = torch.compile(model)
    inputs = _inputs(problem, device, 1234)
    if device == "cuda":
        # The evaluator's flush: do_bench's 256 MiB, or twice the L2.
        from gpu_runner.child import cuda_flush_bytes

        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
        flush = torch.empty(cuda_flush_bytes(l2), dtype=torch.uint8, device="cuda")
    else:
        flush = torch.empty(16 << 20, dtype=torch.uint8)
    with torch.no_grad():
        compiled(*inputs)  # compiles here, before anything is timed
    out: dict = {}
    sides = (("eager", model), ("compile", compiled), ("solution", model_new))
    with gpulock.held(device, phase="timing fidelity: plain measurement"):
        # Every side's events before any profiling: once the PyTorch profiler has run in a process, every later
        # op costs more host time there (benchmarks/profiler_aftereffect.py: 9 to 17 us for one op on the H200),
        # and a host-bound call (torch.compile's on a tiny kernel) carries that into its window. Profiling eager
        # before timing compile had charged compile that after-effect (until 2026-12-05).
        for side, fn in sides:
            host: list[float] = []
            out[f"{side}_event_us"] = _event_median(fn, inputs, device, flush, host)
            if host:
                out[f"{side}_forward_host_us"] = host[0]
        if device == "cuda":
            for side, fn in sides:
                out[f"{side}_kernel_us"] = _profiled_us(fn, inputs)
        if device == "cuda":
            try:
                out["solution_window_breakdown_us"] = _window_breakdown(model_new, inputs, flush)
            except Exception as e:  # noqa: BLE001 - a diagnostic: the table stands without it
                out["solution_window_breakdown_us"] = {"error": repr(e)[:500]}
    return out


# ----- the driver -----
def _past_deadline(e: subprocess.TimeoutExpired) -> str:
    """What a process cut at the deadline had said on stderr (the evaluator logs its stages there): where it was."""
    tail = e.stderr or b""
    if isinstance(tail, bytes):
        tail = tail.decode(errors="replace")
    return f"past the deadline after {e.timeout:.0f} s; its stderr ended:\n{tail[-1500:]}"


def _run_plain(problem: Path, solution: Path, device: str, env: dict, deadline: float) -> dict:
    try:
        return _run_plain_process(problem, solution, device, env, deadline)
    except subprocess.TimeoutExpired as e:
        return {"error": _past_deadline(e)}


def _run_plain_process(problem: Path, solution: Path, device: str, env: dict, deadline: float) -> dict:
    proc = subprocess.run([sys.executable, __file__, "plain", "--problem", str(problem), "--solution", str(solution),
                           "--device", device], capture_output=True, text=True, env=env,
                          timeout=max(10.0, deadline - time.monotonic()))
    if proc.returncode != 0:
        return {"error": proc.stderr[-1500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run_evaluator(problem: Path, solution: Path, device: str, env: dict, deadline: float) -> dict:
    try:
        proc = subprocess.run([sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(problem),
                               "--solution", str(solution), "--device", device, "--json"], capture_output=True,
                              text=True, env=env, cwd=REPO, timeout=max(10.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired as e:
        return {"verdict": None, "error": _past_deadline(e)}
    if proc.returncode != 0:  # no verdict (the evaluator's own failure, or a usage error): say why, from stderr
        return {"verdict": None, "error": f"exit {proc.returncode}: {proc.stderr[-1500:]}"}
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"verdict": None, "error": f"exit 0 with no JSON object: {proc.stdout[-500:]}"}


def within(plain_us: float | None, evaluator_us: float | None) -> bool | None:
    if not plain_us or not evaluator_us:
        return None
    return abs(evaluator_us - plain_us) <= max(TOLERANCE * plain_us, TOLERANCE_US)


def rows_of(name: str, plain_res: dict, result: dict) -> list[dict]:
    rows = []
    for side, key, kernel_key in (("eager", "eager_us", "eager_kernel_time_us"),
                                  ("compile", "compile_us", "compile_kernel_time_us"),
                                  ("solution", "runtime_us", "kernel_time_us")):
        p, e = plain_res.get(f"{side}_event_us"), result.get(key)
        rows.append({"case": name, "side": side, "plain_event_us": p, "evaluator_us": e,
                     "ratio": (e / p) if p and e else None, "within": within(p, e),
                     "evaluator_kernel_us": result.get(kernel_key), "plain_kernel_us": plain_res.get(f"{side}_kernel_us"),
                     "verdict": result.get("verdict")})
    return rows


def table(rows: list[dict]) -> str:
    def f(v: object, fmt: str = "{:.1f}") -> str:
        if isinstance(v, bool):
            return "yes" if v else "NO"
        return "-" if v is None else (fmt.format(v) if isinstance(v, (int, float)) else str(v))

    lines = ["| case | side | plain events (us) | evaluator (us) | ratio | within 5% or 3 us | profiler kernel time: "
             "evaluator / plain (us) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['side']} | {f(r['plain_event_us'])} | {f(r['evaluator_us'])} | "
                     f"{f(r['ratio'], '{:.3f}')} | {f(r['within'])} | {f(r['evaluator_kernel_us'])} / "
                     f"{f(r['plain_kernel_us'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "plain":
        p = argparse.ArgumentParser(prog="timing_fidelity.py plain")
        p.add_argument("--problem", type=Path, required=True)
        p.add_argument("--solution", type=Path, required=True)
        p.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
        a = p.parse_args(argv[1:])
        print(json.dumps(plain(a.problem, a.solution, a.device)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    p.add_argument("--kernelbench", type=Path, default=None, help="a KernelBench checkout's KernelBench/ folder")
    p.add_argument("--only", default="", help="comma-separated substrings of case names")
    p.add_argument("--parallel", type=int, default=3, help="cases prepared at once (timing is one at a time)")
    p.add_argument("--prepare", type=int, default=0, help=(
        "first run every case this many at a time, only to build and load (results dropped, baselines forgotten), "
        "then measure the cases one after another on a quiet host: builds and compiles beside a timed phase load "
        "the host's CPUs and lengthen short calls"))
    p.add_argument("--wait-for", type=Path, default=None, help=(
        "after --prepare, wait (until the deadline) for this file to exist before measuring: what else runs on "
        "the host creates it when it is done"))
    p.add_argument("--deadline-s", type=float, default=1500.0, help="stop starting cases after this long")
    p.add_argument("--out", type=Path, default=None, help="JSON file, rewritten after every case")
    a = p.parse_args(argv)
    from benchmarks._common import machine

    cases = GPU_CASES if a.device == "cuda" else CPU_CASES
    if a.only:
        cases = [c for c in cases if any(s in c[0] for s in a.only.split(","))]
    deadline = time.monotonic() + a.deadline_s
    env = dict(os.environ)
    # Baselines measured in this run (the cache would give earlier runs' figures), builds cached as usual.
    baseline_dir = Path(tempfile.mkdtemp(prefix="kh-fidelity-"))
    env.setdefault("KERNELHUB_CACHE_DIR", str(Path.home() / ".cache" / "kernelhub"))
    for old in (Path(env["KERNELHUB_CACHE_DIR"]) / "baselines").glob("*.json"):
        old.rename(baseline_dir / old.name)
    report = {"machine": machine(), "device": a.device, "cases": [], "rows": []}

    def one(case: tuple[str, str, str]) -> tuple[str, dict, dict]:
        name, problem_spec, solution_spec = case
        problem, solution = resolve(problem_spec, a.kernelbench), resolve(solution_spec, a.kernelbench)
        if time.monotonic() > deadline:
            return name, {"error": "not started: past the deadline"}, {}
        t0 = time.monotonic()
        if a.parallel > 1 or a.prepare == 0:
            # Both sides build and load at once; each takes the device lock only while it times.
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as sides:
                plain_future = sides.submit(_run_plain, problem, solution, a.device, env, deadline)
                result = _run_evaluator(problem, solution, a.device, env, deadline)
                plain_res = plain_future.result()
        else:  # one side at a time: nothing else loads the host while either times
            plain_res = _run_plain(problem, solution, a.device, env, deadline)
            result = _run_evaluator(problem, solution, a.device, env, deadline)
        result["fidelity_wall_s"] = plain_res["wall_s"] = round(time.monotonic() - t0, 1)
        return name, plain_res, result

    if a.prepare > 0:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.prepare) as pool:
            for name, _, result in pool.map(one, cases):
                # Why a case was not accepted while it was prepared (its result is dropped after this line).
                why = ("" if result.get("verdict") == "accepted" else
                       f" ({(result.get('message') or result.get('error') or '')[-400:]})")
                print(f"[{time.strftime('%H:%M:%S')}] prepared {name}: {result.get('verdict')}{why}", file=sys.stderr,
                      flush=True)
        while a.wait_for is not None and not a.wait_for.exists() and time.monotonic() < deadline - 120:
            time.sleep(2)
        for measured in (Path(env["KERNELHUB_CACHE_DIR"]) / "baselines").glob("*.json"):
            measured.unlink()  # measured beside the builds: measured again below, on a quiet host
        a.parallel = 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.parallel)) as pool:
        futures = [pool.submit(one, c) for c in cases]
        for fut in concurrent.futures.as_completed(futures):
            try:
                name, plain_res, result = fut.result()
            except Exception as e:  # noqa: BLE001 - a case that broke is reported, the others go on
                name, plain_res, result = "?", {"error": repr(e)}, {}
            rows = rows_of(name, plain_res, result)
            report["cases"].append({"case": name, "plain": plain_res, "evaluator": {
                k: result.get(k) for k in ("verdict", "message", "rule", "runtime_us", "eager_us", "compile_us",
                                           "kernel_time_us", "eager_kernel_time_us", "compile_kernel_time_us",
                                           "speedup_vs_eager", "speedup_vs_compile", "speedup_vs_compile_kernel_time",
                                           "stats", "baselines", "stage_seconds", "wall_s", "fidelity_wall_s",
                                           "error", "evaluator_version")} | {
                "checks": {k: (result.get("checks") or {}).get(k) for k in (
                    "tail_calibration", "timed_window_tail", "window_drain", "timing_phases_us_reported", "clock_audit",
                    "kernel_time", "timed_calls", "precision", "wall_per_call_us",
                    "back_to_back_forward_host_us_reported", "tight_forward_host_us_reported",
                    "fresh_inputs")}}})
            report["rows"] += rows
            kernel = (result.get("checks") or {}).get("kernel_time") or {}
            busy, floor = kernel.get("event_time_over_device_busy"), kernel.get("event_time_over_busy_and_window")
            print(f"[{time.strftime('%H:%M:%S')}] {name}: verdict {result.get('verdict')} "
                  f"{'' if busy is None else f'(solution event / device busy {busy}) '}"
                  f"{'' if floor is None else f'(event / busy and window {floor}) '}"
                  f"{(result.get('message') or result.get('error') or '')[:300]}", file=sys.stderr, flush=True)
            if a.out:
                a.out.write_text(json.dumps(report, indent=1, default=str))
    for old in baseline_dir.glob("*.json"):  # the cache as it was, plus what this run measured
        target = Path(env["KERNELHUB_CACHE_DIR"]) / "baselines" / old.name
        if not target.exists():
            old.rename(target)
    order = {c[0]: i for i, c in enumerate(cases)}
    report["rows"].sort(key=lambda r: (order.get(r["case"], 99), r["side"]))
    text = table(report["rows"])
    lines = ["", "| case (solution) | plain | old window, no guard | old window, guard | old, op record on | "
             "new window, guard |", "|---|---|---|---|---|---|"]
    for c in sorted(report["cases"], key=lambda c: order.get(c["case"], 99)):
        b = c["plain"].get("solution_window_breakdown_us")
        if isinstance(b, dict) and "plain" in b:
            lines.append(f"| {c['case']} | " + " | ".join(f"{b[k]:.1f}" for k in (
                "plain", "old_no_guard", "old_guard", "old_guard_recorded", "new_guard")) + " |")
    if len(lines) > 3:
        text += "\n" + "\n".join(lines)
    report["table"] = text
    if a.out:
        a.out.write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report["machine"]))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
