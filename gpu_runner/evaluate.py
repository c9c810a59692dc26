"""One evaluation, decided by the trusted parent: `evaluate(problem_source, solution_source, ...) -> dict`.

1. A trusted child (role eager) runs the problem's Model on the trial inputs and on K timing input sets; the
   parent keeps those outputs as the expected ones (reference.py). The solution never shares a process with them.
2. A fresh sandboxed child (role solution) imports the solution; its extension builds are done by the parent
   (builds.py). It runs the same trials (fresh inputs from the same seeds, memory poisoned before each call);
   the parent compares (checks.py). Then adaptive timing on the K sets, a sample of every batch checked
   (solution_timing.py, timing.py).
3. The guards' findings, the memoisation check, the parent's own clock and the speed-of-light bound
   (limits.py) can still reject. Baselines (eager, torch.compile) come from the cache or are timed the
   same way in trusted children (baseline_timing.py).
Each phase takes the evaluation's Context (context.py) and the values the phases before it made; `_Run` runs
them in order. Never raises for anything the solution does; raises ValueError for a malformed problem or bad
arguments (a gpu_runner.config.ConfigError for a bad setting).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_runner import (
    builds,
    checks,
    cleanup,
    config,
    formats,
    memory_plan,
    sandbox,
    solution_timing,
    sysinfo,
    workdir,
)
from gpu_runner.baseline_timing import baselines_phase
from gpu_runner.context import SLOT_MARGIN, Background, Context, log
from gpu_runner.contract import VERDICTS  # noqa: F401 - part of this module's interface
from gpu_runner.reference import Reference, ReferenceData  # noqa: F401 - ReferenceData: part of this interface
from gpu_runner.result import EvaluationResult
from gpu_runner.session import EvaluatorError, Session, Verdict, untrusted  # noqa: F401 - Session: interface
from gpu_runner.session import limits as _limits  # noqa: F401 - part of this module's interface
from gpu_runner.session import marker as _marker  # noqa: F401 - part of this module's interface
from gpu_runner.solution_timing import work_outside_timer  # noqa: F401 - part of this module's interface

MAX_BUILDS = 8


def _skeleton(problem_source: str, solution_source: str, device: str, seed: int) -> EvaluationResult:
    return EvaluationResult(device_kind=device, language=_language(solution_source),
                            problem_hash=formats.source_hash(problem_source),
                            solution_hash=formats.source_hash(solution_source), seed=seed)


def _language(solution_source: str) -> str:
    if workdir.is_bundle(solution_source):
        try:
            return workdir.parse_bundle(solution_source).language
        except workdir.WorkdirError:
            return "cuda"
    return formats.detect_language(solution_source)


def _cuda_present() -> bool:
    present = sysinfo.gpu_snapshot().get("available", False) or os.path.exists("/dev/nvidia0")
    if present and not os.path.exists("/dev/nvidia-uvm"):
        # The driver creates its device nodes on first use, through a setuid helper: that cannot happen in
        # a locked-down child (read-only /dev, no_new_privs), so a trusted process uses CUDA once first.
        subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda')"],
                       capture_output=True, timeout=300)
    return bool(present)


def evaluate(problem_source: str, solution_source: str, *, device: str = "cpu", seed: int = 0,
             on_stage: Callable[[str], None] | None = None, pool: Any = None,
             settings: config.RunnerConfig | None = None) -> dict:
    """Check and time one solution; returns the result object (see docs/EVALUATOR.md).

    pool: a gpu_runner.warm.WarmPool of pre-started processes (runners); without one every process starts cold.
    settings: the runner's settings (config.py); by default read from the environment, once, here.
    """
    started = time.monotonic()
    settings = settings or config.RunnerConfig.from_env()  # a ConfigError (a ValueError) for a bad setting
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
    if pool is not None and pool.device != device:
        raise ValueError(f"the warm pool serves device {pool.device!r}, not {device!r}: use one pool per device")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError("seed must be a non-negative integer")
    meta = formats.problem_metadata(problem_source)  # FormatError (a ValueError) for a malformed problem
    if device == "cuda" and not _cuda_present():
        raise EvaluatorError("device 'cuda' was asked for but this host has no NVIDIA GPU; use --device cpu")
    result = _skeleton(problem_source, solution_source, device, seed)
    result.checks["cleanup"] = _sweep(settings)
    run = _Run(problem_source, solution_source, meta, device, seed, on_stage, result, settings)
    run.pool = pool
    # The GPU's used memory through the evaluation, beside what its plan counted (checks.memory_plan.device_used).
    watch = (memory_plan.DeviceUsedWatch(lambda: list(run.open_stages),
                                         roles=lambda: {s.child.proc.pid: s.role for s in list(run.all_sessions)})
             .start() if device == "cuda" else None)
    run.device_watch = watch
    try:
        run.execute()
        result.accept()
    except Verdict as v:
        result.set_verdict(v.verdict, v.message, v.rule, trials_passed=run.trials_passed)
    finally:
        if watch is not None:  # before the children go: their memory is the figure
            result.checks.setdefault("memory_plan", {})["device_used"] = watch.stop()
        with run.timed("cleanup"):
            run.cleanup()
    if "name" not in result.device:
        result.device = {**sysinfo.device_snapshot(device), "at": "end"}
    result.versions = sysinfo.versions(run.child_versions, cxx=builds.toolchain(False)["cxx"])
    result.wall_s = round(time.monotonic() - started, 3)
    return result.to_json()


def _sweep(settings: config.RunnerConfig) -> dict[str, Any]:
    """What dead evaluations left on this host, removed before this one starts (cleanup.py); for the record."""
    try:
        swept = cleanup.sweep(why="evaluation start", settings=settings)
    except Exception as e:  # noqa: BLE001 - a failed sweep never fails an evaluation
        log(f"cleanup failed: {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    return {"removed": [r["path"] for r in swept["removed"]], "bytes": sum(r["bytes"] for r in swept["removed"]),
            "killed_processes": swept["killed"]}


class _Run(Context):
    """One evaluation: its admission, the solution's builds (served as its child asks for them), and the phases
    in order (execute); or only the builds, ahead of the evaluation (build_ahead, gpu_runner/prebuild.py)."""

    def __init__(self, problem_source: str, solution_source: str, meta: dict[str, Any], device: str, seed: int,
                 on_stage: Callable[[str], None] | None, result: EvaluationResult,
                 settings: config.RunnerConfig | None = None) -> None:
        super().__init__(problem_source, solution_source, meta, device, seed, on_stage, result, settings)
        self.ref = Reference(self)
        self.tails = solution_timing.TailCalibration(self, self.ref)
        self.build_log: list[dict[str, Any]] = []
        self.ref_thread: Background | None = None

    def cleanup(self) -> None:
        self.ending.set()  # the reference's thread, if it waits for memory (memory_ledger), gives up
        try:
            escaped = self.close()
        finally:
            if self.ref_thread is not None:
                self.ref_thread.join(swallow=True)  # its child is gone: it ends at once
            # The outputs this process read and kept, then its allocator's cache, before the ledger's entry goes:
            # the next evaluation on this GPU must find free what this one reserved.
            self.ref.drop_outputs()
            cache: dict[str, Any] | None
            try:
                cache = memory_plan.release_device_cache()
            except Exception as e:  # noqa: BLE001 - a record; the evaluation's verdict stands
                cache = {"error": f"{type(e).__name__}: {e}"[:200]}
            if cache is not None:
                self.result.checks.setdefault("memory_plan", {})["evaluator_cache"] = cache
            # After the join: whatever the reference's thread reserved is released too.
            if self.reservation is not None:  # the children are gone, and their memory with them
                self.reservation.release()
                self.reservation = None
        if escaped:
            self.result.isolation["killed_escaped_processes"] = len(escaped)
        self.record_op_seconds()

    # ----- builds asked for by the solution -----
    def _on_build(self, raw: Any) -> dict[str, Any]:
        # Build time does not count against the child's deadlines, so the builds themselves are bounded.
        if len(self.build_log) >= MAX_BUILDS:
            return {"ok": False, "message": f"a solution may build at most {MAX_BUILDS} extensions"}
        if isinstance(raw, dict) and raw.get("workdir"):
            if self.workdir is None:
                return {"ok": False, "message": "there is no workdir to build"}
            # The parent's own copy of the sources, never what the child sends.
            raw = workdir.build_request(self.workdir)
        limit = self.settings.build_timeout_s
        if sum(b["seconds"] for b in self.build_log) > limit:
            return {"ok": False, "message": f"the builds took over {limit:.0f} s together"}
        try:
            req = builds.validate_request(raw)
        except builds.BuildRequestError as e:
            return {"ok": False, "message": str(e)}
        log(f"build {req['name']} requested")
        res = builds.build(req, device=self.device, timeout_s=limit)
        self.build_log.append({"name": req["name"], "cached": res.cached, "seconds": round(res.seconds, 2),
                               "ok": res.ok, "key": res.key})
        if not res.ok or res.library is None:
            return {"ok": False, "message": f"building extension {req['name']!r} failed:\n{res.message}"}
        session = self.sessions[-1]
        target = session.workdir / "ext" / res.key
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(res.library, target / res.library.name)
        return {"ok": True, "dir": f"ext/{res.key}"}

    # ----- the evaluation -----
    def _admit(self) -> None:
        """What is checked before any process of the solution starts: its format and the static pre-screen."""
        if self.workdir_error:
            raise Verdict("compile_error", f"the workdir: {self.workdir_error}")
        if self.workdir is not None:
            if self.workdir.language == "cuda" and self.device != "cuda":
                raise Verdict("compile_error", "the workdir has CUDA sources (.cu), which need a GPU: submit it to a "
                                               "GPU pool, or write its kernels in .cpp files for the CPU track")
            self.solution_source = self.workdir.model_new_py
        try:
            formats.check_solution(self.solution_source)
        except formats.FormatError as e:
            raise Verdict("compile_error", str(e)) from None
        with self.timed("prescreen"):
            self._prescreen()

    def build_ahead(self) -> dict[str, Any]:
        """Only the solution's builds, into the host's cache, before its evaluation (gpu_runner/prebuild.py): the
        same admission, then the solution's child, with no GPU, imports the solution and its build requests are
        served as in an evaluation. Returns the child's info; a Verdict where the solution fails on the way."""
        self._admit()
        sol = self.session("solution", on_build=self._on_build, gpu=False)
        self.result.isolation = dict(sol.child.isolation)
        reply = untrusted(sol, "load", "building ahead (import and builds, no GPU)",
                          timeout=self.settings.load_timeout_s, build_only=True, **self.load_fields("solution"))
        info = reply.get("info")
        return info if isinstance(info, dict) else {}

    def execute(self) -> None:
        self._admit()
        ref = self.ref
        # The trusted reference computes the expected outputs while the solution's child starts and builds.
        with self.timed("start_processes"):
            ref.start()
            self.stage("compiling")
            sol = self.session("solution", on_build=self._on_build)
            if self.pool is not None and self.device == "cuda":
                # The next job's processes start now, while this one loads and checks: their import of torch
                # (3-11 s on the GPU hosts) had been the next job's wait for its reference's load. Every exclusive
                # phase of this evaluation first waits for them to finish starting (device_lock).
                self.pool.refill()
                self.spares_starting = True
        # Before any input exists: does the problem fit at all (seconds, not a CUDA OOM or the host's OOM killer
        # minutes later)? The solution's child imports meanwhile.
        with self.timed("memory_plan"):
            ref.plan_before_trials()
        # The trusted reference computes the expected outputs while the solution's child loads and builds.
        self.ref_thread = Background(ref.outputs)
        self.result.isolation = dict(sol.child.isolation)
        # The builds are on record whatever the load's end: a compile error's come from the cache or not.
        self.result.checks["builds"] = self.build_log
        if ref.limit_waits_for_footprint():
            # The solution's address-space limit (CPU track) from the measured footprint, on a problem's first
            # evaluation on this device model: the reference's first trial, then the solution's load.
            with self.timed("wait_for_footprint"):
                ref.footprint_ready.wait()
            ref.solution_limit_from_measured()
        with self.timed("solution_load"):
            reply = untrusted(sol, "load", "loading (import, build, ModelNew construction)",
                              timeout=self.settings.load_timeout_s, **self.load_fields("solution"))
        raw_info = reply.get("info")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        self.child_versions = {k: v for k, v in info.items() if isinstance(v, (str, int)) or v is None}
        # Read by the parent from /proc, not taken from the child's word.
        observed = sandbox.observed_isolation(sol.child)
        if self.device == "cpu" and isinstance(observed.get("address_space_bytes"), int):
            # The limit in force, as the kernel reports it, is what the timing plan counts (the harness never sets
            # one above the limit its process started with), and what the result shows beside the one it started at.
            self.solution_memory_bytes = observed["address_space_bytes"]
            rlimits = dict(self.result.isolation.get("rlimits") or {})
            rlimits["address_space_at_start_bytes"] = rlimits.get("address_space_bytes")
            rlimits["address_space_bytes"] = observed["address_space_bytes"]
            self.result.isolation["rlimits"] = rlimits
        self.result.isolation.update({
            "observed": observed,
            "fs": "read-only except its own directory, private /tmp and /dev/shm" if observed.get("root_read_only")
            else "not isolated: the child can write wherever the runner's user can",
            "runtime_guards": bool(info.get("guards")),
        })
        with self.timed("wait_for_reference"):
            self.ref_thread.join()
        self.stage("checking")
        if ref.expected_mode == "on_demand":
            # A check moves up to this many outputs in one request (save_batch).
            self.lend(sol, ref.output_bytes * self.checks_per_batch(ref.output_bytes) + SLOT_MARGIN)
        if ref.expected_mode == "memory":
            # The reference makes its timing input sets while the solution's trials run: nothing is timed yet.
            self.ref_thread = Background(ref.timed_sets)
            with self.timed("trials"), self.device_lock("trials", shared=True):
                checks.trials(self, ref, sol)
            with self.timed("wait_for_reference"):
                self.ref_thread.join()
        else:
            # Outputs too large to keep: the reference computes each trial's just before the solution's, and
            # makes its sets after them (one process, one request at a time).
            with self.timed("trials"), self.device_lock("trials", shared=True):
                checks.trials(self, ref, sol)
            ref.timed_sets()
        self.stage("timing")
        with self.timed("timing"):
            solution_timing.time_solution(self, ref, sol, self.tails)
        with self.timed("integrity"):
            solution_timing.integrity(self, sol)
            self.result.device = {**sysinfo.device_snapshot(self.device), "at": "timing"}
        with self.timed("speed_of_light"):
            bandwidth = solution_timing.speed_of_light(self, ref)
        with self.timed("kernel_time"):
            solution_timing.kernel_time(self, ref, sol, bandwidth, self.tails)
        with self.timed("stop_solution"):
            self.stop(sol)
        self.stage("baselines")
        with self.timed("baselines"):
            baselines_phase(self, ref, self.tails)

    def _prescreen(self) -> None:
        try:
            from gpu_runner import anticheat
        except ImportError:
            self.result.checks["prescreen"] = "not available (gpu_runner.anticheat missing)"
            return
        if self.workdir is not None:
            findings = workdir.prescreen(self.workdir, self.problem_source, self.rules)
        else:
            findings = anticheat.prescreen(self.solution_source, self.meta)
        self.result.checks["prescreen"] = findings
        if findings:
            first = findings[0]
            raise Verdict("rejected", f"rule {first.get('rule')} broken: {first.get('detail')}",
                          str(first.get("rule")))


def evaluate_files(problem: Path, solution: Path, **kwargs: Any) -> dict:
    return evaluate(problem.read_text(), solution.read_text(), **kwargs)
