"""KernelBench's own evaluation of a folder of solutions, timed: the reference beside kernelbench_batch.py.

    python benchmarks/kernelbench_reference_harness.py --kernelbench-src .carry/kernelbench_src \
        --problems DIR --solutions DIR --out F.json [--build-workers N] [--device cuda] [--gpu-arch Hopper]
        [--level 1] [--timeout-s 180] [--deadline-s S] [--work DIR]

Given whole to benchmarks/kernelbench_batch.py as its --kernelbench-harness "COMMAND", it runs on the same host
after our passes, on the same solution files, and its wall time per kernel is set beside ours.

What runs is KernelBench's code, fetched verbatim into --kernelbench-src (src/kernelbench/{eval,timing,dataset,
compile,utils}.py; SOURCE.txt there names the repository, paths and commits), driven the way its
scripts/eval_from_generations.py drives a batch on one GPU with build_cache=True:
1. the build cache: KernelBench's `kernelbench.compile.batch_compile` over every kernel at once, a Pool of
   --build-workers processes (its num_cpu_workers, default 20) on the CPU, each kernel built by
   `build_compile_cache` into its own directory WORK/cache/<run>/<problem>/<sample>; timed as a phase;
2. then one kernel at a time, each in a fresh spawned process (eval_from_generations' batch_eval: one
   mp.Pool(1) per kernel, its result awaited --timeout-s, default its 180 s), KernelBench's
   `eval_kernel_against_ref(original_model_src, custom_model_src, ...)` with eval_from_generations' settings
   (EVAL_SETTINGS: 5 correctness trials, 100 performance trials, measure_performance, CUDA-event timing with
   its L2 flush, fp32) and the kernel's build directory from step 1; each timed, wall clock, from the pool's
   start to its end (the process start, torch's import and CUDA's initialisation included, as there).
eval_kernel_against_ref also times the reference model (its excessive-speedup check, on by default), so its
reference runtime is recorded as it reports it; nothing else is timed by us on the GPU.

Solutions: every .py under --solutions (subfolders too), matched to a problem file of --problems (KernelBench's
`<N>_<Name>.py`) by problem number: KernelBench's runs layout (level_1_problem_19_sample_0_kernel.py), or
named like the problems (19_ReLU.py, as benchmarks/kernelbench_solutions.py writes them), or our slugs
(l1-19-relu.py). They are copied into KernelBench's runs layout under WORK, which compile_single_sample reads.

--out is rewritten after the build phase and after every kernel: per kernel, the problem, whether the build
phase built it, compiled and correctness as KernelBench reports them, its runtime and stats (ms, its own
figures) and the reference's, the wall seconds of its evaluation, the error text (trimmed) and KernelBench's
metadata; phase totals (build, evaluation, total wall seconds, kernels, seconds per kernel); the machine.
--deadline-s (from the start) bounds the whole run: past it no kernel is started (each one left is recorded as
skipped), a kernel running then is stopped, and a build phase still running is stopped (KernelBench's
batch_compile terminates its pool on the KeyboardInterrupt it is sent), so that a GPU call ends in time.

The Python that runs this needs torch and numpy (the GPU hosts have them). KernelBench's eval.py also imports
pydantic (KernelExecResult) and requests, compile.py tqdm: where pydantic or tqdm is missing, the wheels
unpacked in --kernelbench-src/_deps/site serve (appended to sys.path, so the running Python's own copies win).
requests, imported at eval.py's top and used nowhere in it (a leftover of a database fetch), is replaced where it
is missing by a stand-in module put into sys.modules here (STAND_INS), before KernelBench is imported, in this
process and in every process spawned from it; any use of it raises. KernelBench's files stay untouched.

--device cpu rehearses the plumbing on a host without a GPU: the build phase runs (it needs nvcc and a CUDA
build of torch), every evaluation is recorded with the AssertionError eval_kernel_against_ref raises there.
Exit status 0 when it ran (failed kernels included), 2 on bad arguments, with what to fix.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import types
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# scripts/eval_from_generations.py's EvalConfig defaults (SOURCE.txt), passed to eval_kernel_against_ref as it
# passes them.
EVAL_SETTINGS: dict[str, Any] = {
    "num_correct_trials": 5,
    "num_perf_trials": 100,
    "measure_performance": True,
    "timing_method": "cuda_event",
    "verbose": False,
    "backend": "cuda",
    "precision": "fp32",
}
KERNELBENCH_TIMEOUT_S = 180.0  # EvalConfig.timeout: each kernel's evaluation, and each build in batch_compile
KERNELBENCH_CPU_WORKERS = 20  # EvalConfig.num_cpu_workers
RUN_NAME = "kernelhub_reference"
ERROR_CHARS = 600
METADATA_CHARS = 2000
# Modules KernelBench imports but evaluation never calls: replaced, where missing, by a module whose every
# attribute raises.
STAND_INS = ("requests",)
# KernelBench's metadata keys that carry an error, in the order they are reported.
ERROR_KEYS = ("compilation_error", "runtime_error", "correctness_issue", "error_during_performance",
              "cuda_error", "other_error")

PROBLEM_NAME = re.compile(r"(\d+)_[^/]*\.py")
RUNS_NAME = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py")
SLUG_NAME = re.compile(r"l(\d+)-(\d+)-[^/]*\.py")


def _install_stand_ins() -> None:
    """Puts a stand-in into sys.modules for each of STAND_INS the running Python lacks. Run at import, so that
    the processes multiprocessing spawns (which import this file as __mp_main__) get them too."""
    for name in STAND_INS:
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            continue
        module = types.ModuleType(name, f"KernelHub's stand-in for {name}, which KernelBench imports and "
                                        "evaluation never calls (benchmarks/kernelbench_reference_harness.py)")

        def missing(attribute: str, _name: str = name) -> Any:
            raise AttributeError(f"{_name} is not installed here; {_name}.{attribute} is a stand-in's")

        module.__dict__["__getattr__"] = missing  # PEP 562: the module's own attribute lookup
        module.__dict__["__kernelhub_stand_in__"] = True
        sys.modules[name] = module


_install_stand_ins()


@dataclass
class Kernel:
    level: int
    problem: int
    sample: int
    problem_file: Path
    solution_file: Path


class DeadlineReached(KeyboardInterrupt):
    """Sent to the build phase at --deadline-s: batch_compile terminates its pool on a KeyboardInterrupt."""


def _raise_deadline(signum: int, frame: Any) -> None:
    raise DeadlineReached()


def parse_args(argv: list[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernelbench-src", type=Path, required=True,
                   help="folder holding KernelBench's src/kernelbench/ (and SOURCE.txt, _deps/)")
    p.add_argument("--problems", type=Path, required=True, help="KernelBench's problem files of one level")
    p.add_argument("--solutions", type=Path, required=True, help="solution files, matched by problem number")
    p.add_argument("--out", type=Path, required=True, help="the JSON written as it goes")
    p.add_argument("--level", type=int, default=1, help="the problems' level (default 1)")
    p.add_argument("--build-workers", type=int, default=KERNELBENCH_CPU_WORKERS,
                   help=f"batch_compile's processes (eval_from_generations' default {KERNELBENCH_CPU_WORKERS})")
    p.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (a rehearsal: no evaluation runs)")
    p.add_argument("--gpu-arch", default="Hopper",
                   help="KernelBench's set_gpu_arch name (Hopper for an H200; its own default is Ada)")
    p.add_argument("--timeout-s", type=float, default=KERNELBENCH_TIMEOUT_S,
                   help=f"each kernel's evaluation and each build (eval_from_generations: {KERNELBENCH_TIMEOUT_S:g})")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="seconds from the start after which nothing new starts and what runs is stopped")
    p.add_argument("--work", type=Path, default=None,
                   help="runs/ and cache/ go here, kept (default: a temporary folder, removed at the end)")
    return p, p.parse_args(argv)


def _problem_files(folder: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    for path in sorted(folder.glob("*.py")):
        match = PROBLEM_NAME.fullmatch(path.name)
        if match:
            found.setdefault(int(match.group(1)), path)
    return found


def _solution_key(path: Path, level: int) -> tuple[int, int] | str:
    """(problem, sample) of one solution file, or why it is left out."""
    runs = RUNS_NAME.fullmatch(path.name)
    if runs:
        if int(runs.group(1)) != level:
            return f"level {runs.group(1)}, not {level}"
        return int(runs.group(2)), int(runs.group(3))
    slug = SLUG_NAME.fullmatch(path.name)
    if slug:
        return (int(slug.group(2)), 0) if int(slug.group(1)) == level else f"level {slug.group(1)}, not {level}"
    flat = PROBLEM_NAME.fullmatch(path.name)
    if flat:
        return int(flat.group(1)), 0
    return "not a problem's name, KernelBench's runs layout nor a slug"


def match_solutions(problems: dict[int, Path], solutions: Path, level: int,
                    ) -> tuple[list[Kernel], list[dict[str, str]], list[str]]:
    """The kernels to run (by problem, then sample), the files left out and why, and duplicate keys."""
    kernels: dict[tuple[int, int], Kernel] = {}
    left_out: list[dict[str, str]] = []
    duplicates: list[str] = []
    for path in sorted(solutions.rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "__init__.py":
            continue
        key = _solution_key(path, level)
        if isinstance(key, str):
            left_out.append({"file": str(path), "why": key})
        elif key[0] not in problems:
            left_out.append({"file": str(path), "why": f"no problem {key[0]} in the problems folder"})
        elif key in kernels:
            duplicates.append(f"problem {key[0]} sample {key[1]}: {kernels[key].solution_file} and {path}")
        else:
            kernels[key] = Kernel(level, key[0], key[1], problems[key[0]], path)
    return [kernels[k] for k in sorted(kernels)], left_out, duplicates


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[list[Kernel], list[dict[str, str]]]:
    """Refuses (exit 2, with what to fix) what cannot run; returns the kernels and the files left out."""
    if not (args.kernelbench_src / "src" / "kernelbench" / "eval.py").is_file():
        p.error(f"--kernelbench-src {args.kernelbench_src}: no src/kernelbench/eval.py there; fetch KernelBench's "
                "evaluation code into it (SOURCE.txt lists the files)")
    if not args.problems.is_dir():
        p.error(f"--problems {args.problems}: not a folder; give KernelBench's level folder (KernelBench/level1)")
    if not args.solutions.is_dir():
        p.error(f"--solutions {args.solutions}: not a folder")
    if args.build_workers < 1:
        p.error("--build-workers must be at least 1")
    if args.timeout_s <= 0 or (args.deadline_s is not None and args.deadline_s <= 0):
        p.error("--timeout-s and --deadline-s must be positive")
    if not re.fullmatch(r"cuda(:\d+)?|cpu", args.device):
        p.error(f"--device {args.device}: give cuda, cuda:N or cpu")
    if not args.out.parent.is_dir():
        p.error(f"--out {args.out}: its folder {args.out.parent} does not exist")
    problems = _problem_files(args.problems)
    if not problems:
        p.error(f"--problems {args.problems}: no <N>_<Name>.py problem file there")
    kernels, left_out, duplicates = match_solutions(problems, args.solutions, args.level)
    if duplicates:
        p.error("two solutions for one kernel (keep one of each): " + "; ".join(duplicates))
    if not kernels:
        p.error(f"--solutions {args.solutions}: no file matched a problem of {args.problems} (names like "
                "19_ReLU.py, level_1_problem_19_sample_0_kernel.py or l1-19-relu.py)")
    return kernels, left_out


def load_kernelbench(src: Path) -> dict[str, str]:
    """KernelBench's package on sys.path, _deps/site after everything for what this Python lacks; imports its
    build and evaluation modules. Returns where each package evaluation needs was found."""
    sys.path.insert(0, str((src / "src").resolve()))
    site = str((src / "_deps" / "site").resolve())
    for name in ("pydantic", "tqdm"):
        if importlib.util.find_spec(name) is None and site not in sys.path:
            sys.path.append(site)
            importlib.invalidate_caches()
    # KernelBench lives outside this repository (--kernelbench-src), hence the type: ignore.
    import kernelbench.compile  # type: ignore[import-not-found]  # noqa: F401
    import kernelbench.eval  # type: ignore[import-not-found]  # noqa: F401

    origins = {}
    for name in ("kernelbench", "pydantic", "tqdm", *STAND_INS):
        module = sys.modules.get(name)
        if getattr(module, "__kernelhub_stand_in__", False):
            origins[name] = "stand-in (missing here; never called by evaluation)"
        else:
            spec = importlib.util.find_spec(name)
            origins[name] = str(spec.origin or list(spec.submodule_search_locations or [])) if spec else "missing"
    return origins


def _machine() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"hostname": socket.gethostname(), "python": platform.python_version(),
                            "cpus": os.cpu_count(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
                            "cuda_available": torch.cuda.is_available(), "gpu": None,
                            "TORCH_CUDA_ARCH_LIST": os.environ.get("TORCH_CUDA_ARCH_LIST")}
    try:  # the driver's name and version (KernelBench's import has made a CUDA context here already; torch's own
        # name of the GPU comes with each kernel)
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        info["nvidia_smi"] = smi.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        info["nvidia_smi"] = None
    return info


def _trim(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"... ({len(value)} chars)"
    if isinstance(value, dict):
        return {k: _trim(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_trim(v, limit) for v in value]
    return value


def _evaluate_one(job: dict[str, Any]) -> dict[str, Any]:
    """In the spawned process: KernelBench's eval_kernel_against_ref on one kernel, its result as plain data.
    An exception is kept as eval_from_generations' last-level catch keeps it (a failed kernel)."""
    import torch
    from kernelbench import eval as kb_eval

    settings = job["settings"]
    try:
        result = kb_eval.eval_kernel_against_ref(
            original_model_src=job["original_model_src"],
            custom_model_src=job["custom_model_src"],
            measure_performance=settings["measure_performance"],
            timing_method=settings["timing_method"],
            verbose=settings["verbose"],
            num_correct_trials=settings["num_correct_trials"],
            num_perf_trials=settings["num_perf_trials"],
            build_dir=job["build_dir"],
            device=torch.device(job["device"]),
            backend=settings["backend"],
            precision=kb_eval.get_torch_dtype_from_string(settings["precision"]),
        )
    except Exception as e:
        return {"raised": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    if result is None:  # its answer to a build lock or a missing file: eval_from_generations retries later
        return {"returned_none": True}
    return {"result": {
        "compiled": result.compiled, "correctness": result.correctness,
        "runtime": result.runtime, "runtime_stats": result.runtime_stats,
        "ref_runtime": getattr(result, "ref_runtime", None), "ref_runtime_stats": getattr(result, "ref_runtime_stats", None),
        "metadata": kb_eval.check_metadata_serializable_all_types(result.metadata),
    }}


def _row(kernel: Kernel, built: bool | None, status: str, wall: float | None, answer: dict[str, Any]) -> dict:
    result = answer.get("result") or {}
    metadata = result.get("metadata") or {}
    errors = [f"{key}: {metadata[key]}" for key in ERROR_KEYS if metadata.get(key)]
    if answer.get("raised"):
        errors.insert(0, answer["raised"])
    if answer.get("returned_none"):
        errors.insert(0, "eval_kernel_against_ref returned None (a build lock or missing file; not retried here)")
    ran = bool(result)
    return {
        "problem": kernel.problem, "sample": kernel.sample, "problem_file": kernel.problem_file.name,
        "solution_file": str(kernel.solution_file), "built_in_build_phase": built, "status": status,
        "wall_s": None if wall is None else round(wall, 2),
        "compiled": result.get("compiled", False) if status == "done" else None,
        "correctness": result.get("correctness", False) if status == "done" else None,
        # KernelBench's own figures: its timing functions and get_timing_stats are in ms (its field's comment
        # says us); -1 where it did not time.
        "runtime_ms": result.get("runtime") if ran else None,
        "runtime_stats": result.get("runtime_stats") if ran else None,
        "ref_runtime_ms": result.get("ref_runtime") if ran else None,
        "ref_runtime_stats": result.get("ref_runtime_stats") if ran else None,
        "error": _trim(" | ".join(str(e) for e in errors), ERROR_CHARS) if errors else None,
        "metadata": _trim(metadata, METADATA_CHARS) if metadata else None,
        "traceback": _trim(answer["traceback"], METADATA_CHARS) if answer.get("traceback") else None,
    }


def evaluate(kernel: Kernel, work: Path, device: str, limit: float, by_deadline: bool) -> tuple[str, float, dict]:
    """One kernel, as batch_eval runs it: a spawned pool of one, its answer awaited `limit` seconds. Returns
    the status, the wall seconds and the answer."""
    job = {
        "original_model_src": kernel.problem_file.read_text(encoding="utf-8"),
        "custom_model_src": _runs_file(work, kernel).read_text(encoding="utf-8"),
        "build_dir": str(_build_dir(work, kernel)),
        "device": "cuda:0" if device == "cuda" else device,
        "settings": EVAL_SETTINGS,
    }
    start = time.monotonic()
    with mp.get_context("spawn").Pool(1) as pool:
        pending = pool.apply_async(_evaluate_one, (job,))
        try:
            answer, status = pending.get(timeout=limit), "done"
        except mp.TimeoutError:
            answer, status = {}, "cut_by_deadline" if by_deadline else "timed_out"
        except Exception as e:  # the pool's own failure (a result that does not unpickle, say)
            answer, status = {"raised": f"{type(e).__name__}: {e}"}, "error"
    wall = time.monotonic() - start
    if status == "timed_out":  # eval_from_generations removes the build cache of a kernel that timed out
        shutil.rmtree(_build_dir(work, kernel), ignore_errors=True)
    return status, wall, answer


def _runs_file(work: Path, kernel: Kernel) -> Path:
    name = f"level_{kernel.level}_problem_{kernel.problem}_sample_{kernel.sample}_kernel.py"
    return work / "runs" / RUN_NAME / name


def _build_dir(work: Path, kernel: Kernel) -> Path:
    return work / "cache" / RUN_NAME / str(kernel.problem) / str(kernel.sample)


def build_phase(kernels: list[Kernel], work: Path, args: argparse.Namespace, deadline: float | None,
                ) -> tuple[list[bool | None] | None, float, bool]:
    """KernelBench's batch_compile over every kernel; returns its answers (None where cut), the wall seconds
    and whether --deadline-s cut it."""
    from kernelbench.compile import batch_compile

    config = {"verbose": EVAL_SETTINGS["verbose"], "gpu_arch": [args.gpu_arch], "level": args.level,
              "kernel_eval_build_dir": str(work / "cache"), "runs_dir": str(work / "runs"),
              "run_name": RUN_NAME, "num_cpu_workers": args.build_workers, "timeout": args.timeout_s}
    start = time.monotonic()
    if deadline is not None and deadline - start <= 0:
        return None, 0.0, True
    previous = signal.signal(signal.SIGALRM, _raise_deadline)
    if deadline is not None:
        signal.setitimer(signal.ITIMER_REAL, deadline - start)
    try:
        answers, cut = batch_compile([(k.problem, k.sample) for k in kernels], config), False
    except DeadlineReached:
        answers, cut = None, True
    except UnboundLocalError:
        # batch_compile's handler of the interrupt terminates its pool, which the deadline may reach before the
        # pool exists: that too is the deadline's cut, not a failure of the builds
        if deadline is None or time.monotonic() < deadline:
            raise
        answers, cut = None, True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return answers, time.monotonic() - start, cut


class Report:
    """The JSON written to --out after every step."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data

    def write(self) -> None:
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(self.data, indent=1) + "\n")
        partial.replace(self.path)


def _totals(report: Report, started: float, eval_wall: float) -> None:
    rows = report.data["kernels"]
    evaluated = [r for r in rows if r["status"] in ("done", "timed_out", "error")]
    total = time.monotonic() - started
    build = report.data["build_phase"]
    walls = [r["wall_s"] for r in evaluated if r.get("wall_s") is not None]
    # Per kernel: its share of the parallel build plus the mean evaluation of those evaluated. Where the deadline
    # cut the run, the whole wall time over the kernels evaluated would charge them the cut kernels' time too.
    per_kernel = (round(build["wall_s"] / max(1, build.get("built") or len(rows)) + sum(walls) / len(walls), 1)
                  if walls else None)
    report.data["totals"] = {
        "build_wall_s": report.data["build_phase"]["wall_s"], "eval_wall_s": round(eval_wall, 1),
        "total_wall_s": round(total, 1), "kernels": len(rows), "kernels_evaluated": len(evaluated),
        "seconds_per_kernel": per_kernel,
        "complete": len(evaluated) == len(rows),
        "correct": sum(1 for r in rows if r["correctness"]),
    }
    gpus = {r["metadata"].get("hardware") for r in rows if r.get("metadata") and r["metadata"].get("hardware")}
    report.data["machine"]["gpu"] = ", ".join(sorted(gpus)) or None


def run(args: argparse.Namespace, kernels: list[Kernel], left_out: list[dict[str, str]], origins: dict[str, str],
        started: float) -> None:
    deadline = None if args.deadline_s is None else started + args.deadline_s
    from kernelbench.utils import set_gpu_arch  # type: ignore[import-not-found]

    set_gpu_arch([args.gpu_arch])  # as eval_from_generations' main does, for every process started below
    work = args.work or Path(tempfile.mkdtemp(prefix="kb_reference_"))
    for kernel in kernels:
        _runs_file(work, kernel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kernel.solution_file, _runs_file(work, kernel))
    report = Report(args.out, {
        "harness": "KernelBench's batch_compile, then eval_kernel_against_ref one kernel at a time "
                   "(scripts/eval_from_generations.py with build_cache=True, one GPU)",
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv,
        "kernelbench_src": str(args.kernelbench_src), "imported_from": origins,
        "settings": {**EVAL_SETTINGS, "timeout_s": args.timeout_s, "build_workers": args.build_workers,
                     "gpu_arch": args.gpu_arch, "device": args.device, "deadline_s": args.deadline_s},
        "machine": _machine(), "problems": str(args.problems), "solutions": str(args.solutions),
        "work": str(work), "left_out": left_out, "build_phase": {}, "kernels": [], "totals": {},
    })
    print(f"[kb-reference] {len(kernels)} kernels; build phase: batch_compile, {args.build_workers} workers",
          flush=True)
    built, build_wall, cut = build_phase(kernels, work, args, deadline)
    report.data["build_phase"] = {"wall_s": round(build_wall, 1), "cut_by_deadline": cut,
                                  "built": None if built is None else sum(1 for b in built if b)}
    print(f"[kb-reference] build phase {build_wall:.1f} s: {report.data['build_phase']}", flush=True)
    _totals(report, started, 0.0)
    report.write()
    eval_start = time.monotonic()
    for i, kernel in enumerate(kernels):
        flag = built[i] if built is not None and i < len(built) else None
        left = None if deadline is None else deadline - time.monotonic()
        if cut or (left is not None and left <= 0):
            report.data["kernels"].append(_row(kernel, flag, "skipped_past_deadline", None, {}))
            continue
        limit = args.timeout_s if left is None else min(args.timeout_s, left)
        status, wall, answer = evaluate(kernel, work, args.device, limit, limit < args.timeout_s)
        row = _row(kernel, flag, status, wall, answer)
        report.data["kernels"].append(row)
        print(f"[kb-reference] problem {kernel.problem} sample {kernel.sample}: {status} in {wall:.1f} s, "
              f"compiled {row['compiled']}, correct {row['correctness']}, runtime {row['runtime_ms']} ms, "
              f"reference {row['ref_runtime_ms']} ms" + (f"; {row['error'][:200]}" if row["error"] else ""),
              flush=True)
        _totals(report, started, time.monotonic() - eval_start)
        report.write()
    _totals(report, started, time.monotonic() - eval_start)
    report.write()
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"[kb-reference] {json.dumps(report.data['totals'])}", flush=True)


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    parser, args = parse_args(argv)
    kernels, left_out = check_args(parser, args)
    if mp.get_start_method(allow_none=True) is None:
        mp.set_start_method("spawn")  # as eval_from_generations' main does
    try:
        origins = load_kernelbench(args.kernelbench_src)
    except ImportError as e:
        parser.error(f"--kernelbench-src {args.kernelbench_src}: KernelBench's code does not import here ({e}); "
                     "install torch and numpy, or put what is missing under _deps/site")
    run(args, kernels, left_out, origins, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
