"""Where the host's time inside a timed forward goes: one process, the same honest forward, under each of the
evaluator's pieces in turn.

A kernel shorter than the host's work in forward is timed by that work: the L2 flush queued before the start
event hides host time only up to its own length. So a harness piece that costs the host microseconds inside
forward shows up in the window of a short kernel. This script times one solution (and the problem's own
Model) as the fidelity benchmark's plain side does, then again with one piece of the evaluator added at a time,
in an order that never needs one undone (process-wide installs last):

- plain; with an idle gap before each call (a sleep, a pipe round trip to another process, some Python work:
  the evaluator's children wait for the parent's next request between timed calls);
- inside the op guard's dispatch mode alone, the ITT decoy alone, the legacy op record alone;
- with the allowed ops falling through the Python key; the whole forward_guard, with and without the decoy;
- after install_process_guards (audit hook, thread and library guards);
- the evaluator's own child.Harness, in this process, for the eager role and then the solution role: its
  _timed_call host time (phases forward_host) and window.

For each variant: the median host time in forward, the median event window (CUDA) and, on one call, the
Python functions that ran inside forward (sys.setprofile), which names any Python the harness added there.

    python benchmarks/forward_host_cost.py --problem benchmarks/fidelity/add_small.py \
        --solution benchmarks/fidelity/add_small_solution.py --device cuda --out result.json
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import machine  # noqa: E402
from benchmarks.timing_fidelity import load_models  # noqa: E402

CALLS, WARMUP = 200, 20


class _Echo:
    """Another process that answers each line: the round trip a child makes to its parent between calls."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-c", "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def round_trip(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("x\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class _Parent:
    """The parent's side of a solution's build request, for a Harness driven in this process: the extension was
    built when this script imported the solution, so the reply names torch's build directory for it."""

    reply: dict = {}

    def send(self, msg: dict) -> None:
        from torch.utils import cpp_extension

        name = msg["request"]["name"]
        self.reply = {"ok": True, "dir": cpp_extension._get_build_directory(name, verbose=False)}

    def recv(self) -> dict:
        return self.reply


def _churn() -> None:
    # About the Python the harness runs between calls (fingerprints, replies): evicts forward's hot paths.
    json.loads(json.dumps([{"k": i, "v": [i] * 8} for i in range(300)]))


_audit_counts: collections.Counter[str] = collections.Counter()
_audit_on = [False]


def _count_audit(event: str, args: Any) -> None:
    if _audit_on[0]:
        _audit_counts[event] += 1


sys.addaudithook(_count_audit)  # before the evaluator's guards: it counts the audit events forward raises


def _python_calls(fn: Any, inputs: list, enter: Any) -> dict[str, int]:
    """The Python functions (file:name) that ran inside one call of fn, and the audit events it raised (every
    one runs the guards' audit hook, once installed), counted. sys.setprofile only before the process guards,
    which refuse it."""
    counts: collections.Counter[str] = collections.Counter()
    from gpu_runner import guards

    if guards._installed:
        _audit_counts.clear()
        with enter():
            _audit_on[0] = True
            try:
                fn(*inputs)
            finally:
                _audit_on[0] = False
        return {f"audit:{k}": v for k, v in _audit_counts.items()}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            counts[f"{os.path.basename(code.co_filename)}:{code.co_name}"] += 1
        elif event == "c_call":
            counts[f"C:{getattr(arg, '__qualname__', getattr(arg, '__name__', repr(arg)))}"] += 1

    _audit_counts.clear()
    with enter():
        _audit_on[0] = True
        sys.setprofile(profile)
        try:
            fn(*inputs)
        finally:
            sys.setprofile(None)
            _audit_on[0] = False
    counts.pop("C:setprofile", None)
    counts.update({f"audit:{k}": v for k, v in _audit_counts.items()})
    return dict(counts.most_common(25))


def measure(torch: Any, fn: Any, inputs: list, device: str, flush: Any, enter: Any = contextlib.nullcontext,
            gap: Any = None) -> dict:
    """Median host time in forward and (CUDA) median event window, the evaluator's way: the context entered
    outside the window, the flush queued, events right around forward, a device-wide synchronise after."""
    hosts, windows = [], []
    for i in range(WARMUP + CALLS):
        if gap is not None:
            gap()
        with enter():
            if device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                flush.zero_()
                start.record()
                h0 = time.perf_counter()
                out = fn(*inputs)
                h1 = time.perf_counter()
                end.record()
                end.synchronize()
                torch.cuda.synchronize()
                window = start.elapsed_time(end) * 1000.0
            else:
                flush.zero_()
                h0 = time.perf_counter()
                out = fn(*inputs)
                h1 = time.perf_counter()
                window = (h1 - h0) * 1e6
        del out
        if i >= WARMUP:
            hosts.append((h1 - h0) * 1e6)
            windows.append(window)
    return {"host_us": round(statistics.median(hosts), 2), "window_us": round(statistics.median(windows), 2),
            "host_p90_us": round(sorted(hosts)[int(0.9 * len(hosts))], 2)}


def harness_timing(role: str, problem: Path, solution: Path, device: str) -> dict:
    """The evaluator's child.Harness for `role`, driven in this process (no sandbox, no parent): load, input
    sets, warm-up, then timed calls one request at a time as timing.py sends them."""
    from gpu_runner.child import Harness

    harness = Harness(_Parent(), role, {})
    harness.op_load({"device": device, "seed": 0, "problem_file": str(problem), "solution_file": str(solution),
                     "policy": {}})
    harness.op_prepare_timing({"seeds": [11, 12, 13]})
    harness.op_warmup({"calls": WARMUP, "max_s": 30})
    harness.phases_us = {}
    times = []
    for i in range(CALLS):
        reply = harness.op_time_batch({"order": [i % 3], "keep": False, "record": False})
        times.extend(reply["times_us"])
    return {"window_us": round(statistics.median(times), 2),
            "host_us_mean": round(harness.phases_us.get("forward_host", 0.0) / CALLS, 2) if device == "cuda" else None,
            "phases_us_per_call": {k: round(v / CALLS, 2) for k, v in harness.phases_us.items()}}


def child_timing(role: str, problem: Path, solution: Path, device: str) -> dict:
    """The evaluator's own child for `role`, started as an evaluation starts it (sandbox.spawn, locked down), driven
    through its channel: load, input sets, warm-up, then CALLS timed calls one request each (as timing.py sends
    them), then CALLS calls in one request. The difference between the two is what the wait for the next request
    costs a call; the difference from the in-process Harness is what the process's sandbox costs."""
    session = _open_child(role, problem, solution, device)
    try:
        session.request("prepare_timing", seeds=[11, 12, 13])
        session.request("warmup", calls=WARMUP, max_s=30)
        result: dict = {"isolation": session.child.isolation}
        for how in ("one call per request", "one call per request, awake between", "all calls in one request"):
            before = session.request("time_batch", order=[0], keep=False, record=False)["phases_us"]
            times: list[float] = []
            if how.startswith("one call per request"):
                awake = 0.02 if how.endswith("awake between") else 0.0
                for i in range(CALLS):
                    reply = session.request("time_batch", order=[i % 3], keep=False, record=False,
                                            stay_awake_s=awake)
                    times.extend(reply["times_us"])
            else:
                reply = session.request("time_batch", order=[i % 3 for i in range(CALLS)], keep=False, record=False)
                times = list(reply["times_us"])
            after = reply["phases_us"]
            result[how] = {"window_us": round(statistics.median(times), 2),
                           "phases_us_per_call": {k: round((v - before.get(k, 0.0)) / CALLS, 2)
                                                  for k, v in after.items()}}
        return result
    finally:
        session.close()


def _guarded(out: dict, key: str, work: Any) -> None:
    try:
        out[key] = work()
    except Exception as e:  # noqa: BLE001 - one part failing leaves the others' figures standing
        out[key] = {"error": f"{type(e).__name__}: {e}"[:600], "where": traceback.format_exc()[-1500:]}


def _setup(problem_path: Path, solution_path: Path, device: str, prefix: str) -> tuple[Any, Any, list, Any]:
    """(Model, ModelNew, inputs on the device, the evaluator's flush buffer: do_bench's 256 MiB or twice the L2 on
    a GPU, 16 MiB on a CPU)."""
    import torch

    problem, model, model_new = load_models(problem_path, solution_path, device, prefix)
    torch.manual_seed(1)
    with torch.device(device):
        inputs = list(problem.get_inputs())
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    if device == "cuda":
        from gpu_runner.child import cuda_flush_bytes

        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
        flush = torch.empty(cuda_flush_bytes(l2), dtype=torch.uint8, device="cuda")
    else:
        flush = torch.empty(16 << 20, dtype=torch.uint8)
    return model, model_new, inputs, flush


def run(problem_path: Path, solution_path: Path, device: str, deadline: float, out: dict,
        save: Any) -> None:
    # The evaluator's real children first: separate processes, untouched by what this one installs later.
    for role in ("eager", "compile", "solution"):
        if time.monotonic() < deadline:
            _guarded(out.setdefault("children", {}), role,
                     lambda role=role: child_timing(role, problem_path, solution_path, device))
            save()
    in_process(problem_path, solution_path, device, deadline, out, save)


def in_process(problem_path: Path, solution_path: Path, device: str, deadline: float, out: dict,
               save: Any) -> None:
    import torch

    from gpu_runner import guards

    model, model_new, inputs, flush = _setup(problem_path, solution_path, device, "cost")
    echo = _Echo()
    variants: dict[str, dict] = out.setdefault("variants", {})
    calls: dict[str, dict] = out.setdefault("python_in_forward", {})

    def one(name: str, fn: Any, enter: Any = contextlib.nullcontext, gap: Any = None) -> None:
        if time.monotonic() > deadline:
            variants[name] = {"skipped": "deadline"}
            return
        try:
            variants[name] = measure(torch, fn, inputs, device, flush, enter, gap)
            calls[name] = _python_calls(fn, inputs, enter)
        except Exception as e:  # noqa: BLE001 - one variant failing leaves the others' figures standing
            variants[name] = {"error": f"{type(e).__name__}: {e}"[:400]}
        save()

    def legacy_record() -> Any:
        return torch.autograd.profiler.profile(use_kineto=False)

    def stacked(*makers: Any) -> Any:
        @contextlib.contextmanager
        def enter() -> Any:
            with contextlib.ExitStack() as stack:
                for make in makers:
                    stack.enter_context(make())
                yield
        return enter

    def mode() -> Any:
        return guards._BlockTorchCompute(guards.ALLOWED_ATEN_OPS)

    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(*inputs)
        one("compile plain", compiled)
        one("compile, pipe round trip before", compiled, gap=echo.round_trip)
        one("eager plain", model)
        one("solution plain", model_new)
        one("solution, sleep 1 ms before", model_new, gap=lambda: time.sleep(0.001))
        one("solution, pipe round trip before", model_new, gap=echo.round_trip)
        one("solution, python work before", model_new, gap=_churn)
        one("eager, pipe round trip before", model, gap=echo.round_trip)
        one("solution, dispatch mode (every op in Python)", model_new, mode)
        if torch.profiler.itt.is_available():
            one("solution, ITT decoy", model_new, torch.autograd.profiler.emit_itt)
        one("solution, legacy op record", model_new, legacy_record)
    echo.close()
    # The evaluator's trusted children's Harness, in this process, before anything process-wide is installed.
    for role in ("eager", "compile"):
        if time.monotonic() < deadline:
            _guarded(out, f"harness_{role}", lambda role=role: harness_timing(role, problem_path, solution_path, device))
            save()
    guards._let_allowed_ops_through()
    with torch.no_grad():
        one("solution, dispatch mode with fallthrough", model_new, mode)
        if torch.profiler.itt.is_available():
            one("solution, dispatch mode with fallthrough + ITT decoy", model_new,
                stacked(mode, torch.autograd.profiler.emit_itt))
        one("solution, forward_guard without decoy", model_new,
            lambda: guards.forward_guard({"record_ops": False, "itt_decoy": False}))
        one("solution, forward_guard", model_new, lambda: guards.forward_guard({"record_ops": False}))
    guards.install_process_guards()
    with torch.no_grad():
        one("solution plain, process guards installed", model_new)
        one("eager plain, process guards installed", model)
        one("solution, forward_guard, process guards installed", model_new,
            lambda: guards.forward_guard({"record_ops": False}))
    if time.monotonic() < deadline:
        _guarded(out, "harness_solution", lambda: harness_timing("solution", problem_path, solution_path, device))
        save()


def record_aftereffect(problem_path: Path, solution_path: Path, device: str, deadline: float, out: dict,
                       save: Any) -> None:
    """The guard's pieces around the solution's forward before and after one call the op record ran on, in one
    fresh process (--sequence record-aftereffect): on the H200 a guarded forward ran several times slower once a
    profiler had run in its process, on the development machine not at all. Each piece is measured on both sides
    of the recorded call, so that the one whose cost moves is named."""
    import torch

    from gpu_runner import guards

    _, model_new, inputs, flush = _setup(problem_path, solution_path, device, "after")
    variants: dict[str, dict] = out.setdefault("variants", {})
    guards.install_process_guards()  # as in the solution's child: allowed ops fall through the mode

    def mode() -> Any:
        return guards._BlockTorchCompute(guards.ALLOWED_ATEN_OPS)

    pieces: list[tuple[str, Any]] = [
        ("plain", contextlib.nullcontext),
        ("dispatch mode", mode),
        ("forward_guard without decoy", lambda: guards.forward_guard({"record_ops": False, "itt_decoy": False})),
        ("forward_guard", lambda: guards.forward_guard({"record_ops": False})),
    ]
    if torch.profiler.itt.is_available():
        pieces.insert(2, ("ITT decoy", torch.autograd.profiler.emit_itt))

    def side(label: str) -> None:
        for name, enter in pieces:
            key = f"{label}: {name}"
            if time.monotonic() > deadline:
                variants[key] = {"skipped": "deadline"}
                continue
            try:
                variants[key] = measure(torch, model_new, inputs, device, flush, enter)
            except Exception as e:  # noqa: BLE001 - one piece failing leaves the others' figures standing
                variants[key] = {"error": f"{type(e).__name__}: {e}"[:400]}
            save()

    with torch.no_grad():
        side("before")
        t0 = time.perf_counter()
        with guards.forward_guard({"record_ops": True}):
            model_new(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        out["recorded_call_s"] = time.perf_counter() - t0
        side("after one recorded call")


def _kernel_us(torch: Any, fn: Any, inputs: list, device: str, enter: Any = contextlib.nullcontext) -> dict:
    """CUDA Agent's kernel time as the evaluator's op_profile takes it (KERNEL_TIME_WARMUP calls, then the profiler's
    summed device time over KERNEL_TIME_CALLS calls, no flush between them), each call inside `enter`."""
    from torch.profiler import ProfilerActivity, profile

    from gpu_runner.solution_timing import KERNEL_TIME_CALLS, KERNEL_TIME_WARMUP

    if device != "cuda":
        return {"kernel_us": None, "why": "the profiler's device time is measured on CUDA devices only"}
    for _ in range(KERNEL_TIME_WARMUP):
        with enter():
            fn(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(KERNEL_TIME_CALLS):
            with enter():
                fn(*inputs)
        torch.cuda.synchronize()
    names: dict[str, float] = {}  # per call, by kernel name; their sum is CUDA Agent's figure
    for e in prof.key_averages():
        key = e.key[:80]
        names[key] = names.get(key, 0.0) + float(getattr(e, "self_device_time_total", 0.0) or 0.0) / KERNEL_TIME_CALLS
    top = sorted(names.items(), key=lambda kv: -kv[1])[:6]
    return {"kernel_us": round(sum(names.values()), 2), "by_name_us": {k: round(v, 2) for k, v in top}}


def profiler_excess(problem_path: Path, solution_path: Path, device: str, deadline: float, out: dict,
                    save: Any) -> None:
    """Where the solution's profiler time goes above a plain process's (--sequence profiler-excess): on an H100 the
    evaluator's kernel_time_us of the fidelity solutions read 15-18% above the same kernel profiled in a plain
    process (docs/BENCHMARKS.md), the baselines' not. The same measure, CUDA Agent's, taken
    - in the evaluator's real children (sandboxed, locked down), solution and eager, through their channel: after
      load alone, and after a timing as an evaluation runs one (input sets, warm-up, timed calls, the solution's
      sampled op record among them), each with the op the evaluation sends (`profile`);
    - in this process: plain twice; then with the process guards installed, plain and inside forward_guard as
      op_profile calls it;
    - the evaluator's own child.Harness for the solution role in this process, after a timing, by op_profile;
    - in this process again, plain and inside forward_guard, now that the Harness's timing has run the legacy op
      record on some of its calls (the solution's child has run several by the time it is profiled).
    The piece after which the figure rises is the cause, or the sandbox where only the real child reads high."""
    import torch

    from gpu_runner import guards

    res: dict[str, Any] = out.setdefault("kernel_time", {})

    def child(role: str) -> dict:
        session = _open_child(role, problem_path, solution_path, device)
        try:
            got = {"after load": session.request("profile", seed=7, calls=10, warmup=5)}
            session.request("prepare_timing", seeds=[11, 12, 13])
            session.request("warmup", calls=WARMUP, max_s=30)
            for i in range(CALLS):
                session.request("time_batch", order=[i % 3], keep=False, record=i < 8 or i % 8 == 0)
            got["after a timing"] = session.request("profile", seed=7, calls=10, warmup=5, drop_sets=True)
            return {k: {f: v.get(f) for f in ("kernel_time_us", "device_busy_us", "why")} for k, v in got.items()}
        finally:
            session.close()

    for role in ("solution", "eager"):
        if time.monotonic() < deadline:
            _guarded(res, f"child {role}", lambda role=role: child(role))
            save()
    model, model_new, inputs, _flush = _setup(problem_path, solution_path, device, "excess")
    # Made before the process guards, as in the real child (its construction imports torch._dynamo, which the
    # guards would refuse parts of: a Harness made after them ended this process at times on the development
    # machine, exit 1 and no word).
    from gpu_runner.child import Harness

    harness = Harness(_Parent(), "solution", {})
    with torch.no_grad():
        for key, fn in (("plain solution", model_new), ("plain solution, again", model_new),
                        ("plain eager", model)):
            if time.monotonic() < deadline:
                _guarded(res, key, lambda fn=fn: _kernel_us(torch, fn, inputs, device))
                save()
    guards.install_process_guards()

    def guard() -> Any:
        return guards.forward_guard({"record_ops": False, "itt_decoy": False})

    def measure_guarded(label: str) -> None:
        for key, enter in ((f"{label}: plain", contextlib.nullcontext), (f"{label}: forward_guard", guard)):
            if time.monotonic() < deadline:
                _guarded(res, key, lambda enter=enter: _kernel_us(torch, model_new, inputs, device, enter))
                save()

    with torch.no_grad():
        measure_guarded("process guards installed")

    def harness_profile() -> dict:
        harness.op_load({"device": device, "seed": 0, "problem_file": str(problem_path),
                         "solution_file": str(solution_path), "policy": {}})
        harness.op_prepare_timing({"seeds": [11, 12, 13]})
        harness.op_warmup({"calls": WARMUP, "max_s": 30})
        for i in range(CALLS):
            harness.op_time_batch({"order": [i % 3], "keep": False, "record": i < 8 or i % 8 == 0})
        reply = harness.op_profile({"seed": 7, "calls": 10, "warmup": 5, "drop_sets": True})
        return {f: reply.get(f) for f in ("kernel_time_us", "device_busy_us", "why")}

    # Its timing's recorded calls come before the last pair of measurements.
    if time.monotonic() < deadline:
        _guarded(res, "harness solution after a timing", harness_profile)
    else:
        res["harness solution after a timing"] = {"skipped": "deadline"}
    save()
    with torch.no_grad():
        measure_guarded("after the Harness's timing and its recorded calls")


def _open_child(role: str, problem: Path, solution: Path, device: str) -> Any:
    """The evaluator's own child for `role`, started as an evaluation starts it (sandbox.spawn, locked down), its
    build requests answered as the evaluation answers them (built or found in the cache, a private copy in the
    child's directory), the problem (and the solution) loaded."""
    import shutil

    from gpu_runner import builds, evaluate

    def on_build(raw: Any) -> dict:
        req = builds.validate_request(raw)
        res = builds.build(req, device=device)
        if not res.ok or res.library is None:
            return {"ok": False, "message": res.message}
        target = session.workdir / "ext" / res.key
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(res.library, target / res.library.name)
        return {"ok": True, "dir": f"ext/{res.key}"}

    session = evaluate.Session(role, device=device, limits_=evaluate._limits(device, role), on_build=on_build)
    try:
        (session.workdir / "problem.py").write_text(problem.read_text())
        if role == "solution":
            (session.workdir / "solution.py").write_text(solution.read_text())
        session.request("load", timeout=600, device=device, seed=0, problem_file="problem.py",
                        solution_file="solution.py" if role == "solution" else None, policy={})
    except BaseException:
        session.close()
        raise
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", type=Path, default=REPO / "benchmarks/fidelity/add_small.py")
    parser.add_argument("--solution", type=Path, default=REPO / "benchmarks/fidelity/add_small_solution.py")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget-s", type=float, default=240.0)
    parser.add_argument("--out")
    parser.add_argument("--sequence", choices=("all", "record-aftereffect", "profiler-excess"), default="all",
                        help=("all: every variant above; record-aftereffect: the guard's pieces before and after one "
                              "recorded call; profiler-excess: the profiler's kernel time in the evaluator's children, "
                              "in this process and in its Harness"))
    args = parser.parse_args(argv)
    out: dict = {"machine": machine(), "device": args.device, "problem": str(args.problem),
                 "solution": str(args.solution), "calls": CALLS}

    # Opened now: once the process guards are installed, this process may open no file outside its directory.
    fd = os.open(args.out, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644) if args.out else None

    def save() -> None:
        if fd is not None:
            data = json.dumps(out, indent=1, default=str).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)

    sequence = {"all": run, "record-aftereffect": record_aftereffect, "profiler-excess": profiler_excess}[args.sequence]
    sequence(args.problem.resolve(), args.solution.resolve(), args.device, time.monotonic() + args.budget_s, out, save)
    save()
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
