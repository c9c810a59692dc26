"""One evaluation, decided by the trusted parent: `evaluate(problem_source, solution_source, ...) -> dict`.

1. A trusted child (role eager) runs the problem's Model on the trial inputs and on K timing input sets; the
   parent keeps those outputs as the expected ones. The solution never shares a process with them.
2. A fresh sandboxed child (role solution) imports the solution; its extension builds are done by the parent
   (builds.py). It runs the same trials (fresh inputs from the same seeds, memory poisoned before each call);
   the parent compares. Then adaptive timing on the K sets, a sample of every batch checked (timing.py).
3. The guards' findings, the memoisation check, the parent's own clock and the speed-of-light bound
   (limits.py) can still reject. Baselines (eager, torch.compile) come from the cache or are timed the
   same way in trusted children.
Never raises for anything the solution does; raises ValueError for a malformed problem or bad arguments.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import random
import shutil
import stat
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_runner import (
    baselines,
    builds,
    cleanup,
    correctness,
    formats,
    gpulock,
    ipc,
    limits,
    memory_plan,
    precision,
    sandbox,
    sysinfo,
    timing,
    workdir,
)
from gpu_runner.contract import VERDICTS  # noqa: F401 - part of this module's interface
from gpu_runner.protocol import ChannelClosed, ChannelTimeout, ProtocolError, load_tensors
from gpu_runner.result import EvaluationResult

N_TRIALS = max(correctness.MIN_TRIALS, int(os.environ.get("KERNELHUB_TRIALS", "5")))
MAX_OUTPUT_FILE = 8 << 30
# Memory for the K timing input sets (each set lives in the solution's and the reference's process).
SETS_BUDGET = {"cuda": 8 << 30, "cpu": 512 << 20}
MIN_SETS, MAX_SETS = 2, 16  # with memory to spare; the memory plan goes down to 1 where it is short
# A trusted child's output file over this size is mapped by the parent, not copied into its memory.
MMAP_OVER = 64 << 20
MAX_BUILDS = 8
# Outputs moved through device memory lent to the child (gpu_runner/ipc.py) rather than files: on a GPU, where the
# trials' expected outputs are too large to keep (memory_plan.EXPECTED_IN_MEMORY_BYTES: some 170 MiB an output
# and more). KERNELHUB_OUTPUT_IPC=0 turns it off (files, as before).
IPC_VAR = "KERNELHUB_OUTPUT_IPC"
# The requests whose replies name saved outputs: the slot is poisoned before each.
SAVING_OPS = frozenset({"trial", "save_batch", "profile", "replay", "set_outputs"})
SLOT_MARGIN = 64 * ipc.ALIGN  # room for the alignment of an output's tensors in a slot
# The second metric (CUDA Agent's, _kernel_time): warm-up calls, then profiled calls.
KERNEL_TIME_WARMUP, KERNEL_TIME_CALLS = 5, 10


def _step_timeout() -> float:
    return float(os.environ.get("KERNELHUB_STEP_TIMEOUT_S", "120"))


def _load_timeout() -> float:
    return float(os.environ.get("KERNELHUB_LOAD_TIMEOUT_S", "300"))


def _log(msg: str) -> None:
    print(f"kernelhub: {msg}", file=sys.stderr, flush=True)


class Verdict(Exception):
    def __init__(self, verdict: str, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.verdict, self.message, self.rule = verdict, message, rule


class EvaluatorError(RuntimeError):
    """A failure of the evaluator or of the problem, not of the solution."""


@dataclass(frozen=True)
class ReferenceData:
    """What the reference's trials found, for one (problem, seed, device): the trials' seeds and expected outputs
    (None where a trial's are computed when its turn comes: `expected_mode` "on_demand", for outputs too large to
    keep), their float64 runs for the precision rule, the output's structure, the inputs the timing may perturb,
    the sizes, whether forward changes its inputs, and the reference's measured footprint. A warm pool keeps it,
    in this trusted process, for the next evaluation of the same problem (gpu_runner/warm.py)."""

    trial_seeds: tuple[int, ...]
    sample_seeds: tuple[int, ...]
    expected: tuple[list[Any] | None, ...]
    ground_truth: tuple[list[Any] | None, ...]
    fp64_notes: tuple[str, ...]
    structure: Any
    perturbable: list[Any]
    input_bytes: int
    output_bytes: int
    changes_inputs: bool
    footprint: dict[str, int] | None
    expected_mode: str

    def nbytes(self) -> int:
        """The tensors it holds (what a warm pool counts against its budget)."""
        return sum(t.numel() * t.element_size() for ts in self.expected + self.ground_truth if ts
                   for t in ts if t is not None)


class _ChildFailed(Exception):
    def __init__(self, kind: str, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.rule = kind, message, rule


class _ChildGone(Exception):
    def __init__(self, how: str, timed_out: bool) -> None:
        super().__init__(how)
        self.how, self.timed_out = how, timed_out


class Session:
    """The parent's side of one child: send an op, serve build requests, return the reply."""

    def __init__(self, role: str, *, device: str, limits_: sandbox.Limits,
                 on_build: Callable[[Any], dict[str, Any]] | None = None) -> None:
        self.role = role
        self.workdir = sandbox.new_workdir(f"{role}-")
        self.child = sandbox.spawn(["-m", "gpu_runner.child", role], workdir=self.workdir, limits=limits_)
        self.on_build = on_build
        self.started = time.monotonic()
        self.wall_limit = limits_.wall_s
        self.build_seconds = 0.0
        self.prestarted = False  # set by gpu_runner/warm.py for a child started before its job
        self.lock_wait_s = 0.0  # spent by the parent waiting for the host's GPU lock: not the child's time
        # Per op: [requests, seconds by the parent's clock, build time excluded]: where an evaluation's time goes.
        self.op_seconds: dict[str, list[float]] = {}
        self.slot: ipc.Slot | None = None  # device memory lent to the child for its outputs (lend_slot)
        self.lent = False  # the child mapped it: its saves may be markers
        self.pending_fds: list[int] = []  # a capability slot's descriptor, sent right after the next request

    def begin(self, on_build: Callable[[Any], dict[str, Any]] | None) -> None:
        """A pre-started child takes its job: its life is counted from now (gpu_runner/warm.py)."""
        self.on_build = on_build
        self.started = time.monotonic()

    def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        t0, built = time.monotonic(), self.build_seconds
        try:
            return self._request(op, timeout=timeout, **fields)
        finally:
            entry = self.op_seconds.setdefault(op, [0, 0.0])
            entry[0] += 1
            entry[1] += time.monotonic() - t0 - (self.build_seconds - built)

    def _request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        channel = self.child.channel
        if self.lent and self.slot is not None and op in SAVING_OPS:
            self.slot.poison()  # what the child leaves out reads as NaN, not as an earlier output
        try:
            channel.send({"op": op, **fields})
            if self.pending_fds:
                fds, self.pending_fds = self.pending_fds, []
                channel.send_fds(fds)
        except ChannelClosed:
            raise _ChildGone(self.child.exit_description(), False) from None
        deadline = time.monotonic() + (timeout or _step_timeout())
        # The child's whole life is bounded too (build time excluded): a slow drip of answers ends as well.
        life_end = self.started + self.build_seconds + self.lock_wait_s + self.wall_limit
        while True:
            try:
                msg = channel.recv(deadline=min(deadline, life_end))
            except ChannelTimeout:
                raise _ChildGone("did not answer in time", True) from None
            except (ChannelClosed, ProtocolError):
                time.sleep(0.05)
                raise _ChildGone(self.child.exit_description(), False) from None
            if msg.get("op") == "build" and self.on_build is not None:
                t0 = time.monotonic()
                reply = self.on_build(msg.get("request"))
                spent = time.monotonic() - t0
                deadline += spent
                self.build_seconds += spent
                life_end += spent
                channel.send(reply)
                continue
            if "op" in msg:
                raise _ChildGone("sent an unexpected message", False)
            if not msg.get("ok"):
                kind = msg.get("kind")
                kind = kind if kind in ("compile_error", "runtime_error", "rejected", "internal") else "runtime_error"
                rule = msg.get("rule") if isinstance(msg.get("rule"), str) else None
                raise _ChildFailed(kind, str(msg.get("message", ""))[:4000], rule)
            return msg

    def tensors(self, name: Any, *, trusted: bool = False) -> list[Any]:
        """The tensors the child saved as `name`: copied out of the lent slot where the file is its marker
        (ipc.py), else read from the file; a trusted child's large files are mapped (protocol.py)."""
        if not isinstance(name, str) or "\x00" in name:
            raise ProtocolError(f"bad output file name {name!r:.80}")
        if self.lent and "/" not in name and not name.startswith("."):
            raw = _marker(self.workdir / name)
            if raw is not None:
                assert self.slot is not None
                try:
                    return self.slot.read(ipc.read_marker(raw))
                except Exception as e:  # noqa: BLE001 - a malformed marker, or no memory for it: the child's fault
                    raise ProtocolError(f"output {name} in the lent device memory could not be read: "
                                        f"{type(e).__name__}: {str(e)[:300]}") from None
        return load_tensors(self.workdir, name, max_bytes=MAX_OUTPUT_FILE, mmap_over=MMAP_OVER if trusted else None)

    def lend_slot(self, nbytes: int, request: Callable[..., dict[str, Any]], *,
                  capability: bool = False) -> dict[str, Any]:
        """Lend the child `nbytes` of device memory for its outputs (ipc.py), offered through `request` (the
        ipc_slot op); what came of it, for the result. capability: a slot whose only key is a descriptor passed
        to this child alone (ipc.CapabilitySlot), else a legacy IPC handle. The slot is freed by close(), once
        the child is gone, whatever the child answered: a child that says it could not map it may have."""
        try:
            self.slot = ipc.CapabilitySlot(nbytes) if capability else ipc.Slot(nbytes)
        except Exception as e:  # noqa: BLE001 - no CUDA IPC here: files serve
            return {"way": "files", "why": f"no slot: {str(e)[:300]}"}
        if isinstance(self.slot, ipc.CapabilitySlot):
            self.pending_fds = [self.slot.fd]
        try:
            reply = request(**self.slot.offer())
        finally:
            self.pending_fds = []
            if isinstance(self.slot, ipc.CapabilitySlot):
                self.slot.close_fd()  # the child has its copy; this process keeps the mapping
        if not reply.get("mapped"):
            return {"way": "files", "why": f"the child could not map the slot: {str(reply.get('why'))[:300]}"}
        self.lent = True
        return {"way": "cuda_ipc_fd" if capability else "cuda_ipc", "slot_bytes": self.slot.nbytes}

    def close(self) -> list[int]:
        try:
            if self.child.alive():
                self.child.channel.send({"op": "exit"})
        except ChannelClosed:
            pass
        killed = sandbox.kill(self.child)
        if self.slot is not None:
            self.slot.free()  # after the child is gone: nothing maps it any more
            self.slot = None
        return killed


def _derived_seed(seed: int, what: str, i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{what}:{i}".encode()).digest()[:4], "big") & 0x7FFFFFFF


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


# A trusted child (the reference, torch.compile's) runs the problem's own code, not the submission's: its
# address space may be this many times the solution's. The memory plan (memory_plan.py) is what keeps it within
# the host's memory; the limit only stops a runaway problem.
TRUSTED_MEMORY_FACTOR = 1.5


# A build slot's child on a GPU host imports a CUDA build of torch, whose libraries map more address space than
# the CPU wheel's: its limit is this many times the CPU track's.
BUILD_SLOT_MEMORY_FACTOR = 2.0


def _limits(device: str, role: str = "solution", *, gpu: bool = True) -> sandbox.Limits:
    """gpu=False: a build slot's child, which sees no GPU, and so gets an address-space limit as on the CPU."""
    wall = float(os.environ.get("KERNELHUB_CHILD_WALL_S", "900"))
    mem = None if device == "cuda" and gpu else \
        int(float(os.environ.get("KERNELHUB_CHILD_MEMORY_GB", "8")) * (1 << 30))
    if mem is not None and device == "cuda":
        mem = int(mem * BUILD_SLOT_MEMORY_FACTOR)
    if mem is not None and role != "solution":
        mem = int(mem * TRUSTED_MEMORY_FACTOR)
    return sandbox.Limits(wall_s=wall, cpu_s=int(wall * (os.cpu_count() or 1)), memory_bytes=mem, gpu=gpu)


def evaluate(problem_source: str, solution_source: str, *, device: str = "cpu", seed: int = 0,
             on_stage: Callable[[str], None] | None = None, pool: Any = None) -> dict:
    """Check and time one solution; returns the result object (see docs/EVALUATOR.md).

    pool: a gpu_runner.warm.WarmPool of pre-started processes (runners); without one every process starts cold.
    """
    started = time.monotonic()
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
    result.checks["cleanup"] = _sweep()
    run = _Run(problem_source, solution_source, meta, device, seed, on_stage, result)
    run.pool = pool
    try:
        run.execute()
        result.accept()
    except Verdict as v:
        result.set_verdict(v.verdict, v.message, v.rule, trials_passed=run.trials_passed)
    finally:
        with run.timed("cleanup"):
            run.cleanup()
    if "name" not in result.device:
        result.device = {**sysinfo.device_snapshot(device), "at": "end"}
    result.versions = sysinfo.versions(run.child_versions, cxx=builds.toolchain(False)["cxx"])
    result.wall_s = round(time.monotonic() - started, 3)
    return result.to_json()


def _sweep() -> dict[str, Any]:
    """What dead evaluations left on this host, removed before this one starts (cleanup.py); for the record."""
    try:
        swept = cleanup.sweep(why="evaluation start")
    except Exception as e:  # noqa: BLE001 - a failed sweep never fails an evaluation
        _log(f"cleanup failed: {type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    return {"removed": [r["path"] for r in swept["removed"]], "bytes": sum(r["bytes"] for r in swept["removed"]),
            "killed_processes": swept["killed"]}


def _marker(path: Path) -> bytes | None:
    """The bytes of a child's output file where it is a marker of the lent slot (ipc.MAGIC first), else None
    (load_tensors then reads it, or says what is wrong with it). Opened without following a link and without
    blocking; only a regular file, checked on the open descriptor, so nothing swapped in after a check is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = fh.read(len(ipc.MAGIC)) or b""
            if raw != ipc.MAGIC:
                return None
            return raw + (fh.read(ipc.MAX_MARKER_BYTES) or b"")
        except OSError:
            return None


def _tmpfs(path: Path) -> bool:
    """Whether path lies on a memory-backed filesystem (its files are host memory)."""
    best, fstype = "", ""
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                point = parts[1].replace("\\040", " ")
                if str(path).startswith(point.rstrip("/") + "/") or str(path) == point:
                    if len(point) > len(best):
                        best, fstype = point, parts[2]
    except OSError:
        return False
    return fstype in ("tmpfs", "ramfs")


class _Run:
    def __init__(self, problem_source: str, solution_source: str, meta: dict[str, Any], device: str, seed: int,
                 on_stage: Callable[[str], None] | None, result: EvaluationResult) -> None:
        self.problem_source, self.solution_source, self.meta = problem_source, solution_source, meta
        self.device, self.seed, self.on_stage, self.result = device, seed, on_stage, result
        self.sessions: list[Session] = []
        self.all_sessions: list[Session] = []
        self.reference: Session | None = None
        self.trials_passed = False
        self.child_versions: dict[str, Any] = {}
        self.build_log: list[dict[str, Any]] = []
        self.ref_thread: _Background | None = None
        self.started = time.monotonic()
        self.pool: Any = None
        self.trusted_tail_us: float | None = None
        # A CUDA Agent workdir (gpu_runner/workdir.py): its model_new.py is the solution file the child imports,
        # its sources are built by the parent from this copy.
        self.workdir: workdir.Workdir | None = None
        self.workdir_error = ""
        if workdir.is_bundle(solution_source):
            try:
                self.workdir = workdir.parse_bundle(solution_source)
            except workdir.WorkdirError as e:
                self.workdir_error = str(e)
            result.solution_format = workdir.FORMAT
            self.rules = workdir.effective_rules(self.workdir.rules if self.workdir else None, problem_source)
        else:
            self.rules = workdir.effective_rules(None, problem_source)
        result.rules = self.rules
        self.plan: memory_plan.Plan | None = None
        self.expected_mode = "memory"

    def stage(self, name: str) -> None:
        # When each stage began, seconds from the start: where an evaluation's time goes.
        self.result.checks.setdefault("stage_started_s", {})[name] = round(time.monotonic() - self.started, 3)
        _log(f"stage {name}")
        # Only the contract's stages go out (the site knows no others); "baselines" is for the record.
        if self.on_stage is not None and name in ("compiling", "checking", "timing"):
            self.on_stage(name)

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Adds the seconds spent inside to result.stage_seconds[name]: where an evaluation's time goes."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            spent = self.result.stage_seconds
            spent[name] = round(spent.get(name, 0.0) + time.monotonic() - t0, 3)

    def cleanup(self) -> None:
        escaped: list[int] = []
        for s in self.sessions:
            escaped += s.close()
        if self.ref_thread is not None:
            self.ref_thread.join(swallow=True)  # its child is gone: it ends at once
        if escaped:
            self.result.isolation["killed_escaped_processes"] = len(escaped)
        self.result.op_seconds = {s.role: {op: [int(n), round(t, 3)] for op, (n, t) in s.op_seconds.items()}
                                  for s in self.all_sessions}

    @contextlib.contextmanager
    def _device_lock(self, phase: str, *, shared: bool = False) -> Iterator[None]:
        """Hold the host-wide lock of this device (gpulock.py): exclusive while `phase` times, shared while it
        uses the device without timing; the wait is recorded, and counts against no child's deadline."""
        holds: list[gpulock.Hold] = []
        try:
            with gpulock.held(self.device, phase=phase, shared=shared) as hold:
                holds.append(hold)
                for s in self.sessions:
                    s.lock_wait_s += hold.waited_s
                yield
        except gpulock.GpuLockTimeout as e:
            raise EvaluatorError(str(e)) from None
        finally:
            for h in holds:  # wall-clock times, comparable across the evaluations of a host
                self.result.checks.setdefault("device_lock", []).append({
                    "phase": phase, "device": h.device, "shared": h.shared, "waited_s": round(h.waited_s, 3),
                    "held_from": round(h.acquired_at, 4), "held_until": round(h.released_at or 0.0, 4)})

    def _session(self, role: str, on_build: Callable[[Any], dict[str, Any]] | None = None, *,
                 gpu: bool = True) -> Session:
        s = self.pool.take(role) if self.pool is not None and gpu else None
        if s is None:
            s = Session(role, device=self.device, limits_=_limits(self.device, role, gpu=gpu), on_build=on_build)
        else:
            s.begin(on_build)
        self.result.checks.setdefault("prestarted", {})[role] = s.prestarted
        self.sessions.append(s)
        self.all_sessions.append(s)
        (s.workdir / "problem.py").write_text(self.problem_source)
        if role == "solution":
            (s.workdir / "solution.py").write_text(self.solution_source)
        return s

    def _trusted(self, s: Session, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        try:
            return s.request(op, timeout=timeout, **fields)
        except _ChildFailed as e:
            raise EvaluatorError(f"the reference ({s.role}) failed at {op}: {e.message}") from None
        except _ChildGone as e:
            raise EvaluatorError(f"the reference ({s.role}) process {e.how} at {op}:\n{s.child.log_tail()}") from None

    def _untrusted(self, s: Session, op: str, what: str, *, timeout: float | None = None,
                   **fields: Any) -> dict[str, Any]:
        try:
            return s.request(op, timeout=timeout, **fields)
        except _ChildFailed as e:
            if e.kind == "rejected":
                raise Verdict("rejected", f"rule {e.rule or 'anti_cheat'} broken while {what}: {e.message}",
                              e.rule or "anti_cheat") from None
            if e.kind == "internal":
                raise EvaluatorError(e.message) from None
            raise Verdict(e.kind, f"{what}: {e.message}") from None
        except _ChildGone as e:
            if e.timed_out:
                limit = timeout or _step_timeout()
                raise Verdict("timeout", f"the solution did not finish {what} within {limit:.0f} s "
                                         "(the evaluation process was killed)") from None
            tail = s.child.log_tail(1500).strip()
            raise Verdict("runtime_error", f"the solution's process {e.how} while {what}"
                          + (f"; its last output:\n{tail}" if tail else "")) from None

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
        if sum(b["seconds"] for b in self.build_log) > builds.BUILD_TIMEOUT_S:
            return {"ok": False, "message": f"the builds took over {builds.BUILD_TIMEOUT_S:.0f} s together"}
        try:
            req = builds.validate_request(raw)
        except builds.BuildRequestError as e:
            return {"ok": False, "message": str(e)}
        _log(f"build {req['name']} requested")
        res = builds.build(req, device=self.device)
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
        sol = self._session("solution", on_build=self._on_build, gpu=False)
        self.result.isolation = dict(sol.child.isolation)
        reply = self._untrusted(sol, "load", "building ahead (import and builds, no GPU)", timeout=_load_timeout(),
                                build_only=True, **self._load_fields("solution"))
        info = reply.get("info")
        return info if isinstance(info, dict) else {}

    def execute(self) -> None:
        self._admit()
        # The trusted reference computes the expected outputs while the solution's child starts and builds.
        with self.timed("start_processes"):
            self.reference = self._session("eager")
            self.stage("compiling")
            sol = self._session("solution", on_build=self._on_build)
        # Before any input exists: does the problem fit at all (seconds, not a CUDA OOM or the host's OOM killer
        # minutes later)? The solution's child imports meanwhile.
        with self.timed("memory_plan"):
            self._plan_before_trials()
        # The trusted reference computes the expected outputs while the solution's child loads and builds.
        self.ref_thread = _Background(self._reference_outputs)
        self.result.isolation = dict(sol.child.isolation)
        # The builds are on record whatever the load's end: a compile error's come from the cache or not.
        self.result.checks["builds"] = self.build_log
        with self.timed("solution_load"):
            reply = self._untrusted(sol, "load", "loading (import, build, ModelNew construction)",
                                    timeout=_load_timeout(), **self._load_fields("solution"))
        raw_info = reply.get("info")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        self.child_versions = {k: v for k, v in info.items() if isinstance(v, (str, int)) or v is None}
        # Read by the parent from /proc, not taken from the child's word.
        observed = sandbox.observed_isolation(sol.child)
        self.result.isolation.update({
            "observed": observed,
            "fs": "read-only except its own directory, private /tmp and /dev/shm" if observed.get("root_read_only")
            else "not isolated: the child can write wherever the runner's user can",
            "runtime_guards": bool(info.get("guards")),
        })
        with self.timed("wait_for_reference"):
            self.ref_thread.join()
        self.stage("checking")
        if self.expected_mode == "on_demand":
            # A check moves up to this many outputs in one request (save_batch).
            self._lend(sol, self.output_bytes * self._checks_per_batch(self.output_bytes) + SLOT_MARGIN)
        if self.expected_mode == "memory":
            # The reference makes its timing input sets while the solution's trials run: nothing is timed yet.
            self.ref_thread = _Background(self._timed_reference_sets)
            with self.timed("trials"), self._device_lock("trials", shared=True):
                self._trials(sol)
            with self.timed("wait_for_reference"):
                self.ref_thread.join()
        else:
            # Outputs too large to keep: the reference computes each trial's just before the solution's, and
            # makes its sets after them (one process, one request at a time).
            with self.timed("trials"), self._device_lock("trials", shared=True):
                self._trials(sol)
            self._timed_reference_sets()
        self.stage("timing")
        with self.timed("timing"):
            self._time_solution(sol)
        with self.timed("integrity"):
            self._integrity(sol)
            self.result.device = {**sysinfo.device_snapshot(self.device), "at": "timing"}

        with self.timed("speed_of_light"):
            self._physics()
        with self.timed("kernel_time"):
            self._kernel_time(sol)
        with self.timed("stop_solution"):
            for s in [sol]:
                s.close()
                self.sessions.remove(s)
        self.stage("baselines")
        with self.timed("baselines"):
            self._baselines()

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

    def _load_fields(self, role: str) -> dict[str, Any]:
        policy = {k: self.meta[k] for k in ("allow_torch",) if k in self.meta}
        fields = {"device": self.device, "seed": self.seed, "problem_file": "problem.py",
                  "solution_file": "solution.py" if role == "solution" else None, "policy": policy}
        if role == "solution" and self.workdir is not None:
            fields["extension"] = {"name": workdir.EXTENSION_NAME}
        return fields

    def _reference_outputs(self) -> None:
        with self._device_lock("reference trials", shared=True):
            self._reference_outputs_held()
        # While the solution's child still loads: the clock audit's one-time costs in this trusted process
        # (child.op_warm_audit), which its first null call paid inside the timing stage.
        assert self.reference is not None
        with self.timed("reference_warm_audit"):
            self._trusted(self.reference, "warm_audit", timeout=_load_timeout())

    def _plan_before_trials(self) -> None:
        """Load the reference, work out the problem's footprint (cached from an earlier evaluation on this device
        model, else from the shapes on the meta device), and refuse at once what cannot fit."""
        ref = self.reference
        assert ref is not None
        with self._device_lock("reference load", shared=True), self.timed("reference_load"):
            self._trusted(ref, "load", timeout=_load_timeout(), **self._load_fields("eager"))
        self.device_model = sysinfo.device_model(self.device)
        self.free_at_start = (memory_plan.host_free(), memory_plan.device_free(self.device))
        cached = memory_plan.load_footprint(self.result.problem_hash, self.device_model)
        if cached is not None:
            sizes, source = cached, "cached"
        else:
            reply = self._trusted(ref, "footprint", seed=self.seed)
            i_b, o_b = reply.get("input_bytes"), reply.get("output_bytes")
            if type(i_b) is not int:
                self.result.checks["memory_plan"] = {"before_trials": f"no footprint: {reply.get('why')}"}
                return
            # An output the meta device cannot work out counts as nothing here: a refusal must be certain.
            sizes = {"input_bytes": i_b, "output_bytes": o_b if type(o_b) is int else 0, "peak_bytes": 0}
            source = "meta"
        self.sizes_before_trials = sizes
        p = self._make_plan(sizes["input_bytes"], sizes["output_bytes"], sizes["peak_bytes"], source)
        self.result.checks["memory_plan"] = {"before_trials": p.record()}
        if not p.fits:
            raise Verdict("runtime_error", p.message)

    def _make_plan(self, input_bytes: int, output_bytes: int, peak_bytes: int | None,
                   source: str) -> memory_plan.Plan:
        per_set = max(1, input_bytes + output_bytes)
        host, gpu = self.free_at_start
        return memory_plan.plan(
            self.device, input_bytes=input_bytes, output_bytes=output_bytes, peak_bytes=peak_bytes, source=source,
            host=host, gpu=gpu,
            child_limits=(_limits(self.device, "eager").memory_bytes, _limits(self.device).memory_bytes),
            n_trials=N_TRIALS,
            sets_wanted=max(MIN_SETS, min(MAX_SETS, SETS_BUDGET[self.device] // per_set)),
            keep_wanted=timing.batch_limits(self.device, output_bytes)[0], tmpfs_work=_tmpfs(sandbox.work_base()),
            lent_outputs=(self._checks_per_batch(output_bytes) + (self._ipc_mode() == "capability"))
            if self._ipc_on() else 0)

    def _ipc_mode(self) -> str:
        """KERNELHUB_OUTPUT_IPC: `0` files only; `1` (the default) a legacy-handle slot for the solution's outputs;
        `capability` capability slots (ipc.CapabilitySlot) for the solution's and the reference's."""
        value = os.environ.get(IPC_VAR, "1").strip().lower()
        if value not in ("0", "1", "capability"):
            raise EvaluatorError(f"{IPC_VAR}={value!r}: use 0 (outputs through files), 1 (a slot of device memory "
                                 "for the solution's outputs) or capability (slots for both children's)")
        return value

    def _ipc_on(self) -> bool:
        return self.device == "cuda" and self._ipc_mode() != "0"

    def _checks_per_batch(self, output_bytes: int) -> int:
        return timing.batch_limits(self.device, output_bytes)[1]

    def _lend(self, s: Session, nbytes: int) -> None:
        """Device memory for a child's outputs (ipc.py), where they are too large to keep (on demand); the way they
        went, in checks.output_transfer. The trusted reference gets one only as a capability slot: a legacy
        CUDA IPC handle is not a capability (whoever has its bytes can open the allocation), so a slot of its
        holding expected outputs could be read, or written, by the solution; its outputs then go through files."""
        capability = self._ipc_mode() == "capability"
        if not self._ipc_on() or nbytes <= 0 or (s.role != "solution" and not capability):
            return
        if s.role == "solution":
            def offer(**fields: Any) -> dict[str, Any]:
                return self._untrusted(s, "ipc_slot", "mapping the lent memory", **fields)
        else:
            def offer(**fields: Any) -> dict[str, Any]:
                return self._trusted(s, "ipc_slot", **fields)
        with self.timed("output_slots"):
            outcome = s.lend_slot(nbytes, offer, capability=capability)
        self.result.checks.setdefault("output_transfer", {})[s.role] = outcome

    def _reference_outputs_held(self) -> None:
        ref = self.reference
        assert ref is not None
        # The trials' expected outputs depend only on (problem, seed, device): a warm pool keeps them in this
        # trusted process's memory, out of the solution's reach, and the reference skips them.
        cache_key = (self.result.problem_hash, self.seed, self.device, N_TRIALS)
        remembered = self.pool.references.get(cache_key) if self.pool is not None else None
        self.result.checks["reference_trials_cached"] = remembered is not None
        if remembered is not None:
            data = remembered
        else:
            sizes = getattr(self, "sizes_before_trials", None)
            o_b = int(sizes.get("output_bytes") or 0) if sizes else 0
            if (N_TRIALS + 1) * o_b > memory_plan.EXPECTED_IN_MEMORY_BYTES:
                self._lend(ref, o_b + SLOT_MARGIN)  # one output a request; only as a capability slot
            with self.timed("reference_trials"):
                data = self._reference_trials(ref)
            if self.pool is not None and data.expected_mode == "memory":
                self.pool.references.put(cache_key, data, data.nbytes())
        self._adopt(data)

    def _adopt(self, data: ReferenceData) -> None:
        """The run works from the reference's data: its own copies of what the on-demand trials fill in later
        (expected outputs, float64 runs, notes, whether the forward changes its inputs); the rest as it is."""
        self.trial_seeds, self.sample_seeds = list(data.trial_seeds), list(data.sample_seeds)
        self.expected, self.ground_truth = list(data.expected), list(data.ground_truth)
        self.fp64_notes = list(data.fp64_notes)
        self.structure, self.perturbable = data.structure, data.perturbable
        self.input_bytes, self.output_bytes = data.input_bytes, data.output_bytes
        self.ref_changes_inputs, self.ref_footprint = data.changes_inputs, data.footprint
        self.expected_mode = data.expected_mode

    def _timed_reference_sets(self) -> None:
        assert self.reference is not None
        with self.timed("reference_sets"), self._device_lock("reference sets", shared=True):
            self._reference_sets(self.reference)

    def _reference_trials(self, ref: Session) -> ReferenceData:
        trial_seeds = [_derived_seed(self.seed, "trial", i) for i in range(N_TRIALS)]
        # Read by _fp64_file and _ground_truth while the trials run.
        self.fp64_notes = []
        expected: list[list[Any] | None] = []
        # The float64 run of each trial (precision.py), None where it could not be done (or not yet: on_demand).
        ground_truth: list[list[Any] | None] = []
        # Where large outputs are sampled for the precision rule: a seed the solution cannot know.
        sample_seeds = [random.SystemRandom().randrange(1 << 31) for _ in trial_seeds]
        changes_inputs = False
        footprint: dict[str, int] | None = None
        structure: Any = None
        perturbable: list[Any] = []
        input_bytes = output_bytes = 0
        for i, s in enumerate(trial_seeds):
            if i > 0 and self.expected_mode == "on_demand":
                # Computed just before the solution's trial i (_expected_trial).
                expected.append(None)
                ground_truth.append(None)
                continue
            if i == 0:
                before = self._trusted(ref, "memory", reset=True)
            reply = self._trusted(ref, "trial", seed=s, file=f"ref_trial_{i}.pt", fp64_file=self._fp64_file(i),
                                  sample_seed=sample_seeds[i])
            if i == 0:
                after = reply.get("memory_after_call") or self._trusted(ref, "memory")
                footprint = self._measure_footprint(reply, before, after)
            if reply["problems"]:
                raise EvaluatorError(f"the problem's Model output is unusable: {'; '.join(reply['problems'])}")
            outputs = ref.tensors(f"ref_trial_{i}.pt", trusted=True)
            expected.append(outputs)
            (ref.workdir / f"ref_trial_{i}.pt").unlink(missing_ok=True)
            ground_truth.append(self._ground_truth(ref, i, reply))
            structure = reply["structure"]
            changes_inputs |= bool(reply.get("changed_inputs"))
            unusable = correctness.reference_problems(outputs, self.meta, self.device)
            if unusable:
                raise EvaluatorError(f"the problem cannot judge solutions (trial {i + 1}): {'; '.join(unusable)}")
            if i == 0:
                self._check_deterministic(ref, s, outputs, structure)
            perturbable = reply["perturbable"] if self.meta.get("perturb_timed_inputs", True) else []
            input_bytes, output_bytes = int(reply["input_bytes"]), int(reply["output_bytes"])
            # On demand, trial 0's outputs are the one set kept: the solution's first trial compares with them,
            # and the parent holds no more at a time than the determinism check just did (two). Computing them
            # again had been a whole reference trial of a 6 GiB problem. _trials lets them go once used.
        return ReferenceData(
            trial_seeds=tuple(trial_seeds), sample_seeds=tuple(sample_seeds), expected=tuple(expected),
            ground_truth=tuple(ground_truth), fp64_notes=tuple(self.fp64_notes), structure=structure,
            perturbable=perturbable, input_bytes=input_bytes, output_bytes=output_bytes,
            changes_inputs=changes_inputs, footprint=footprint, expected_mode=self.expected_mode)

    def _measure_footprint(self, reply: dict[str, Any], before: dict[str, Any],
                           after: dict[str, Any]) -> dict[str, int]:
        """The reference's own peak in its first trial, cached for later evaluations on this device model; and
        where the trials' expected outputs live (memory_plan.py)."""
        if self.device == "cuda":
            peak = int(after.get("cuda_peak_bytes", 0)) - int(before.get("cuda_allocated_bytes", 0))
        else:
            peak = int(after.get("vmhwm_bytes", 0)) - int(before.get("vmrss_bytes", 0))
        footprint = {"input_bytes": int(reply["input_bytes"]), "output_bytes": int(reply["output_bytes"]),
                     "peak_bytes": max(0, peak)}
        memory_plan.store_footprint(self.result.problem_hash, self.device_model, footprint)
        if (N_TRIALS + 1) * footprint["output_bytes"] > memory_plan.EXPECTED_IN_MEMORY_BYTES:
            self.expected_mode = "on_demand"
        return footprint

    def _fp64_file(self, i: int) -> str | None:
        """Where trial i's float64 run goes, or None where the precision rule's run is skipped: it doubles the
        reference's memory (a float64 copy of the model, the inputs and the outputs), so it runs only where the
        memory plan keeps the expected outputs in memory (the footprint known before the trials)."""
        sizes = getattr(self, "sizes_before_trials", None)
        if sizes and (N_TRIALS + 1) * int(sizes.get("output_bytes") or 0) > memory_plan.EXPECTED_IN_MEMORY_BYTES:
            note = ("skipped: the outputs are over the memory plan's in-memory bound, and a float64 run would double "
                    "the reference's memory")
            if note not in self.fp64_notes:
                self.fp64_notes.append(note)
            return None
        return f"ref64_trial_{i}.pt"

    def _ground_truth(self, ref: Session, i: int, reply: dict[str, Any]) -> list[Any] | None:
        """Trial i's float64 run (precision.py), read from the reference's file, or None with the reason noted."""
        if reply.get("fp64"):
            truth = ref.tensors(f"ref64_trial_{i}.pt", trusted=True)
            (ref.workdir / f"ref64_trial_{i}.pt").unlink(missing_ok=True)
            return truth
        if "fp64" in reply:  # asked for, and not done: the child says why (not asked: _fp64_file noted why)
            self.fp64_notes.append(str(reply.get("fp64_note") or "no float64 run"))
        return None

    def _expected_trial(self, i: int) -> list[Any]:
        """Trial i's expected outputs: kept from the reference's trials, or computed by it now (on_demand)."""
        kept = self.expected[i]
        if kept is not None:
            return kept
        ref = self.reference
        assert ref is not None
        with self.timed("reference_trials"):
            reply = self._trusted(ref, "trial", seed=self.trial_seeds[i], file=f"ref_trial_{i}.pt",
                                  fp64_file=self._fp64_file(i), sample_seed=self.sample_seeds[i])
            if reply["problems"]:
                raise EvaluatorError(f"the problem's Model output is unusable: {'; '.join(reply['problems'])}")
            self.ground_truth[i] = self._ground_truth(ref, i, reply)
            if reply.get("structure") != self.structure:
                raise EvaluatorError(f"the problem's Model returned {reply.get('structure')} in trial {i + 1}, "
                                     f"{self.structure} in the first")
            self.ref_changes_inputs |= bool(reply.get("changed_inputs"))
            expected = ref.tensors(f"ref_trial_{i}.pt", trusted=True)
            (ref.workdir / f"ref_trial_{i}.pt").unlink(missing_ok=True)
            unusable = correctness.reference_problems(expected, self.meta, self.device)
            if unusable:
                raise EvaluatorError(f"the problem cannot judge solutions (trial {i + 1}): {'; '.join(unusable)}")
        return expected

    def _reference_sets(self, ref: Session) -> None:
        fp = self.ref_footprint
        self.plan = self._make_plan(self.input_bytes, self.output_bytes, fp["peak_bytes"] if fp else None,
                                    "measured" if fp else "unmeasured")
        self.result.checks.setdefault("memory_plan", {})["timing"] = self.plan.record()
        if not self.plan.fits:
            raise Verdict("runtime_error", self.plan.message)
        self.n_sets = self.plan.n_sets
        rng = random.SystemRandom()
        # Fresh seeds every evaluation: nothing a solution saw before can match these inputs.
        self.set_seeds = [rng.randrange(1 << 31) for _ in range(self.n_sets)]
        # A forward that changes its inputs in place gets a fresh copy of its input set at every call.
        self._trusted(ref, "prepare_timing", seeds=self.set_seeds, copy_sets=self.ref_changes_inputs)
        self.expected_sets: list[list[Any]] = []
        if not self.perturbable and self.expected_mode == "memory":
            # Only unperturbed timed calls are checked against these; perturbed ones are replayed (check_batch).
            self._trusted(ref, "set_outputs", prefix="ref_set_")
            self.expected_sets = [ref.tensors(f"ref_set_{k}.pt") for k in range(self.n_sets)]
        self.result.checks.update({"trials": N_TRIALS, "timing_input_sets": self.n_sets,
                                      "input_bytes": self.input_bytes, "output_bytes": self.output_bytes})

    def _check_deterministic(self, ref: Session, seed: int, first: list[Any], structure: Any) -> None:
        """The same inputs again, from another random state: the outputs must agree within the tolerances."""
        reply = self._trusted(ref, "trial", seed=seed, rng_seed=_derived_seed(self.seed, "rerun", 0),
                              file="ref_trial_again.pt")
        again = ref.tensors("ref_trial_again.pt", trusted=True) if not reply["problems"] else []
        (ref.workdir / "ref_trial_again.pt").unlink(missing_ok=True)
        cmp = correctness.compare(first, again, self.meta, self.device)
        if reply.get("structure") != structure or not cmp.ok:
            differs = cmp.message if reply.get("structure") == structure else \
                f"the output is {reply.get('structure')}, then {structure}"
            raise EvaluatorError(
                "the problem's Model is not deterministic: two runs on the same inputs disagree "
                f"({differs}). Its forward draws random numbers (torch.rand*, dropout in training mode) or keeps "
                "state between calls, so no solution could match it; fix the problem (call self.eval() in "
                "__init__, or take the random values as inputs from get_inputs)")

    def _poison_bytes(self) -> int:
        return int(min(2 * self.output_bytes + (1 << 20), 1 << 30))

    def _compare(self, expected: list[Any], got: list[Any], where: str) -> correctness.Comparison:
        cmp = correctness.compare(expected, got, self.meta, self.device)
        checks = self.result.checks
        checks["max_abs_err"] = max(checks.get("max_abs_err", 0.0), cmp.max_abs_err)
        checks["max_rel_fro_err"] = max(checks.get("max_rel_fro_err", 0.0), cmp.rel_fro_err)
        if not cmp.ok:
            raise Verdict("wrong_answer", f"{where}: {cmp.message}")
        return cmp

    def _structure_problems(self, reply: dict[str, Any], where: str) -> None:
        problems = reply.get("problems")
        if not isinstance(problems, list):
            raise Verdict("runtime_error", f"{where}: malformed reply from the evaluation process")
        if problems:
            text = "; ".join(str(p)[:300] for p in problems[:3])
            rule = "output_aliases_input" if "shares memory" in text else "output_not_plain_tensor"
            if "changed after forward returned" in text:
                rule = "output_changed_after_return"
            raise Verdict("rejected", f"rule {rule} broken, {where}: {text}", rule)

    def _trials(self, sol: Session) -> None:
        check = precision.Check(self.meta)
        for i, s in enumerate(self.trial_seeds):
            where = f"trial {i + 1} of {len(self.trial_seeds)} (seed {s})"
            reply = self._untrusted(sol, "trial", where, seed=s, file=f"trial_{i}.pt",
                                    poison_bytes=self._poison_bytes())
            self._structure_problems(reply, where)
            if reply.get("structure") != self.structure:
                raise Verdict("wrong_answer", f"{where}: the output is {reply.get('structure')}, the reference's "
                                              f"is {self.structure}")
            got = self._read(sol, f"trial_{i}.pt", where)
            (sol.workdir / f"trial_{i}.pt").unlink(missing_ok=True)
            expected = self._expected_trial(i)
            self._compare(expected, got, where)
            check.add(expected, self.ground_truth[i], got, self.sample_seeds[i])
            if self.expected_mode == "on_demand":
                self.expected[i] = None  # at most one trial's expected outputs held at a time
            del expected
            del got
            changed = reply.get("changed_inputs")
            if changed and not self.ref_changes_inputs:
                # Timed calls reuse their input sets, so the next call would see changed inputs. (Copies for every
                # call would also warm the caches before the timer starts.) A solution that hides the change only
                # fails the checks of later calls instead.
                raise Verdict("rejected", f"rule input_changed broken, {where}: forward changed input(s) "
                              f"{changed} in place, which the reference leaves unchanged; write the results to new "
                              "tensors and leave the inputs as they were", "input_changed")
        self._precision(check)
        self.trials_passed = True

    def _precision(self, check: precision.Check) -> None:
        """The precision rule (precision.py), on the trials that had a float64 run; its figures in the result."""
        outcome = check.outcome()
        checked = sum(t is not None for t in self.ground_truth)
        if outcome is None:
            notes = sorted(set(self.fp64_notes)) or ["no float32 output"]
            self.result.checks["precision"] = {"rule": check.level, "checked": False,
                                                  "note": "; ".join(notes)[:500]}
            return
        figures = {**outcome.figures, "checked": True, "trials": checked}
        if self.fp64_notes:
            figures["note"] = f"{len(self.fp64_notes)} trial(s) without a float64 run: {self.fp64_notes[0][:300]}"
        self.result.checks["precision"] = figures
        if not outcome.ok:
            raise Verdict("wrong_answer", f"trials: {outcome.message}", precision.RULE)

    def _read(self, sol: Session, name: Any, where: str) -> list[Any]:
        try:
            return sol.tensors(name)
        except ProtocolError as e:
            raise Verdict("runtime_error", f"{where}: the output could not be read ({e})") from None

    def _time_solution(self, sol: Session) -> None:
        # The memory plan's cap on the outputs a batch keeps, for the timing loop's batch_limits (this thread).
        cap = timing.KEEP_CALLS.set(self.plan.keep_outputs if self.plan is not None else None)
        try:
            self._time_solution_planned(sol)
        finally:
            timing.KEEP_CALLS.reset(cap)

    def _time_solution_planned(self, sol: Session) -> None:
        # The most a timing batch keeps, with the poison block and room for the call in flight (child.py
        # _reserve_heap; CPU only).
        longest, _ = timing.batch_limits(self.device, self.output_bytes)
        reserve = longest * self.output_bytes + self._poison_bytes() + 2 * self.output_bytes
        if self.plan is not None and not self.plan.reserve:
            reserve = 0  # it would not fit beside the sets and the batch's outputs (memory_plan.py)
        reply = self._untrusted(sol, "prepare_timing", "preparing the timing inputs", seeds=self.set_seeds,
                                copy_sets=self.ref_changes_inputs, reserve_bytes=reserve)
        got = reply.get("reserved_bytes") if isinstance(reply, dict) else None
        self.result.checks["heap_reserved_bytes"] = got if type(got) is int else None  # the child's word
        batch_no = [0]
        # Perturbations applied to each set since the reference last caught up with it.
        pending: dict[int, list[Any]] = {k: [] for k in range(self.n_sets)}
        ref = self.reference
        assert ref is not None

        def check_batch(positions: list[int], order: list[int], perturb: list[Any] | None) -> None:
            batch_no[0] += 1
            prefix = f"b{batch_no[0]}_"
            with self.timed("timing_checks_solution"):
                reply = self._untrusted(sol, "save_batch", "saving timed outputs", positions=positions,
                                        prefix=prefix)
            self._structure_problems(reply, "in a timed call")
            raw_files = reply.get("files")
            files: dict[str, Any] = raw_files if isinstance(raw_files, dict) else {}
            checked = set(positions)
            for pos, k in enumerate(order):
                if perturb:
                    pending[k].append(perturb[pos])
                if pos not in checked:
                    continue
                where = f"timed call on input set {k}"
                if perturb:
                    # The reference replays the same changes to its copy of the set, then computes.
                    with self.timed("timing_checks_reference"):
                        self._trusted(ref, "replay", set=k, changes=pending[k], file=f"{prefix}exp_{pos}.pt")
                        pending[k] = []
                        expected = ref.tensors(f"{prefix}exp_{pos}.pt", trusted=True)
                        (ref.workdir / f"{prefix}exp_{pos}.pt").unlink(missing_ok=True)
                else:
                    expected = self.expected_sets[k]
                if str(pos) not in files:
                    raise Verdict("runtime_error", f"{where}: no output was saved")
                with self.timed("timing_checks_solution"):
                    got = self._read(sol, files[str(pos)], where)
                with self.timed("timing_checks_compare"):
                    self._compare(expected, got, f"{where} (checked during timing; each timed call gets changed "
                                                 "inputs, so a result cached from an earlier call is wrong)")
                (sol.workdir / files[str(pos)]).unlink(missing_ok=True)

        policy = self._load_fields("solution")["policy"]

        def null_call(sets: list[int], changes: list[Any], keep: bool,
                      heads: list[int] | None) -> tuple[float, float | None, int | None, Any]:
            """The harness's work of one run of timed calls (timing.RUN_CALLS) in the trusted process, by the
            parent's clock (seconds), by the kernel's count of its busiest thread's CPU time (us), its page faults,
            and the trusted child's account of its phases (us)."""
            awake = timing.AWAKE_S.get(self.device, 0.0)
            with self.timed("timing_clock_audit"), sandbox.stopped(sol.child):
                if awake:
                    # Woken first, as the solution's child is for its timed calls (timing.AWAKE_S).
                    self._trusted(ref, "ping", stay_awake_s=awake)
                cpu0 = sandbox.thread_cpu_ns(ref.child)
                t0 = time.perf_counter()
                reply = self._trusted(ref, "null_call", sets=sets, changes=changes, keep=keep,
                                      output_bytes=self.output_bytes, poison_bytes=self._poison_bytes(),
                                      policy=policy, head_start_cycles=heads)
                wall = time.perf_counter() - t0
                cpu1 = sandbox.thread_cpu_ns(ref.child)
                return (wall, sandbox.busiest_thread_us(cpu0, cpu1), sandbox.faults_between(cpu0, cpu1),
                        reply.get("phases_us"))

        try:
            with self._device_lock("solution"):
                allowance = self._tail_allowance(sol)
                t = timing.run_timing(_UntrustedTiming(self, sol), device=self.device, n_sets=self.n_sets,
                                      check_batch=check_batch, perturbable=self.perturbable,
                                      output_bytes=self.output_bytes, null_call=null_call,
                                      cpu_clock=lambda: sandbox.thread_cpu_ns(sol.child),
                                      tail_allowance_us=allowance)
        except timing.TimingRejected as e:
            if e.audit is not None:
                self.result.checks["clock_audit"] = e.audit  # the figures behind a timing_forged verdict
            self._guard_findings_first(sol)
            raise Verdict("rejected", f"rule {e.rule} broken: {e.message}", e.rule) from None
        stats = t.stats
        self.result.set_timing(stats)
        self.result.checks.update({"timed_calls": t.calls, "timed_window_tail": t.tail,
                                      "timed_calls_checked": t.checked_calls, "memoization": t.memo,
                                      "fresh_inputs": t.fresh, "wall_per_call_us": t.wall_per_call_us,
                                      "back_to_back_forward_host_us_reported": t.back_to_back_forward_host_us_reported,
                                      "clock_audit": t.clock_audit,
                                      # The child's own word, for where the time goes; not used for any decision.
                                      "timing_phases_us_reported": t.child_phases_us_reported})
        median = stats["median_us"]
        # The perturbed inputs already make memoised results fail the checks; this timing heuristic (noisy on
        # a busy host) decides only where a problem turned the perturbation off.
        if t.memo and t.memo["suspicious"] and not self.perturbable:
            self._guard_findings_first(sol)
            raise Verdict("rejected", "rule memoization broken: repeat calls on an input set took "
                          f"{t.memo['repeat_median_us']:.1f} us against {t.memo['first_call_median_us']:.1f} us "
                          "for the first call on each set; do not cache results across calls", "memoization")
        # On a GPU, work left running on another stream or thread shows up in the parent's clock. (On a CPU
        # nothing is asynchronous, and a busy host makes this comparison noisy: the guards watch threads.)
        if self.device == "cuda" and work_outside_timer(t.wall_per_call_us, median):
            self._guard_findings_first(sol)
            raise Verdict("rejected", f"rule work_outside_timer broken: back-to-back calls took "
                          f"{t.wall_per_call_us:.0f} us each by the evaluator's clock, the timed calls "
                          f"{median:.0f} us; all work must finish inside forward", "work_outside_timer")

    def _kernel_time(self, sol: Session) -> None:
        """The second metric, CUDA Agent's: the profiler's summed device time per call (child.op_profile), on a
        fresh input set, with the last profiled call's output checked against the reference. It is the solution
        process's own account (its profiler), so it is reported beside the audited event time, never instead of
        it; a figure that beats the speed of light is withheld, with the reason."""
        checks = self.result.checks
        if self.device != "cuda":
            checks["kernel_time"] = {"measured": False, "why": "measured on CUDA devices only"}
            return
        ref = self.reference
        assert ref is not None
        seed = random.SystemRandom().randrange(1 << 31)
        where = "the profiled calls (kernel time)"
        with self._device_lock("kernel time"):
            reply = self._untrusted(sol, "profile", where, seed=seed, file="profiled.pt",
                                    calls=KERNEL_TIME_CALLS, warmup=KERNEL_TIME_WARMUP)
        self._structure_problems(reply, where)
        with self._device_lock("kernel time reference", shared=True):
            self._trusted(ref, "trial", seed=seed, file="ref_profiled.pt")
        self._compare(ref.tensors("ref_profiled.pt"), self._read(sol, "profiled.pt", where), where)
        value = reply.get("kernel_time_us")
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            checks["kernel_time"] = {"measured": False, "why": "the profiler reported no usable figure"}
            return
        floor = limits.check(self.device, float(value), limits.least_bytes(self.input_bytes, self.output_bytes),
                             self.bandwidth)
        if not floor["ok"]:
            checks["kernel_time"] = {"measured": False, "reported_us": value, "why": (
                "the profiler's device time is below the speed of light for the bytes the problem moves; the "
                "process's own profile is not trusted there")}
            return
        checks["kernel_time"] = {"measured": True, "calls": KERNEL_TIME_CALLS, "warmup": KERNEL_TIME_WARMUP}
        self.result.kernel_time_us = float(value)

    def _tail_allowance(self, session: Session) -> float | None:
        """CUDA: what the device-wide synchronise after the timed window costs an honest call in `session`'s
        process (timing.tail_allowance over empty calls there, under the exclusive device lock). The solution's
        own figure is capped by the trusted reference's (TAIL_CAP_FACTOR x it + TAIL_CAP_US): its process could
        inflate its empty calls to hide work past forward, and gains at most that cap."""
        if self.device != "cuda" or self.reference is None:
            return None
        calls = timing.TAIL_CALIBRATION_CALLS
        if self.trusted_tail_us is None:
            reply = self._trusted(self.reference, "tail_calibrate", calls=calls)
            self.trusted_tail_us = timing.tail_allowance(timing.validate_times(reply.get("tails_us"), calls))
        if session is self.reference:
            tails = None
            allowance = self.trusted_tail_us
        else:
            if session.role == "solution":
                reply = self._untrusted(session, "tail_calibrate", "timing (calibration)", calls=calls)
            else:
                reply = self._trusted(session, "tail_calibrate", calls=calls)
            tails = timing.validate_times(reply.get("tails_us"), calls)
            cap = timing.TAIL_CAP_FACTOR * self.trusted_tail_us + timing.TAIL_CAP_US
            allowance = min(timing.tail_allowance(tails), cap)
        self.result.checks.setdefault("tail_calibration", {})[session.role] = {
            "calls": calls, "allowance_us": round(allowance, 2), "reference_allowance_us": round(self.trusted_tail_us, 2),
            "median_us": round(statistics.median(tails), 2) if tails else None}
        return allowance

    def _guard_findings_first(self, sol: Session) -> None:
        """Before a rejection by a timing heuristic: a rule the guards saw broken is the exact reason, so it is
        the one reported (a fallback hidden in a worker thread also looks like memoisation to the timer)."""
        try:
            self._integrity(sol)
        except Verdict as v:
            if v.verdict == "rejected":
                raise
        except Exception:  # noqa: BLE001 - the timing verdict stands
            pass

    def _integrity(self, sol: Session) -> None:
        reply = self._untrusted(sol, "integrity", "reporting")
        findings = reply.get("findings")
        if not isinstance(findings, list):
            raise Verdict("rejected", "rule anti_cheat broken: the integrity report was tampered with", "anti_cheat")
        self.result.checks["integrity"] = findings[:20]
        if findings:
            f = findings[0] if isinstance(findings[0], dict) else {"rule": "anti_cheat", "detail": str(findings[0])}
            raise Verdict("rejected", f"rule {f.get('rule')} broken: {f.get('detail')}", str(f.get("rule")))

    def _physics(self) -> None:
        median = self.result.runtime_us
        assert median is not None  # set by the timing, which comes first
        self.bandwidth = limits.cached_bandwidth(self.device_model)
        if self.bandwidth is None and self.reference is not None:
            # Measured once per device model, by the trusted child, while nothing else of ours runs.
            nbytes = (1 << 30) if self.device == "cuda" else (64 << 20)
            with self._device_lock("calibration"):
                bw = float(self._trusted(self.reference, "calibrate", bytes=nbytes)["bytes_per_s"])
            limits.store_bandwidth(self.device_model, bw, f"best of 10 copies of {nbytes} bytes")
            self.bandwidth = bw
        sol_check = limits.check(self.device, median, limits.least_bytes(self.input_bytes, self.output_bytes),
                                 self.bandwidth)
        self.result.checks["speed_of_light"] = sol_check
        if not sol_check["ok"]:
            raise Verdict("rejected", f"rule faster_than_speed_of_light broken: {median:.2f} us to move "
                          f"{sol_check['least_bytes']} bytes is below the physical floor of "
                          f"{sol_check['floor_us']:.2f} us on this device", "faster_than_speed_of_light")

    def _baselines(self) -> None:
        versions = sysinfo.versions(self.child_versions, cxx=builds.toolchain(False)["cxx"])
        for mode in ("eager", "compile"):
            key = baselines.key(problem_hash=self.result.problem_hash, device_model=self.device_model,
                                versions=versions, mode=mode)
            stats = baselines.load(key)
            if stats is None or baselines.worth_remeasuring(stats):
                fresh = self._time_baseline(mode)
                if fresh.get("median_us"):
                    stats = baselines.keep_better(stats, fresh)
                    baselines.store(key, stats)
                elif stats is None:
                    stats = fresh
            else:
                stats = {**stats, "cached": True}
            self.result.set_baseline(mode, stats, stats.get("kernel_time_us"))

    def _time_baseline(self, mode: str) -> dict[str, Any]:
        try:
            if mode == "eager":
                session = self.reference
            else:
                session = self._session("compile")
                # torch.compile compiles on the first call: under the shared hold, before the timed one.
                with self._device_lock("baseline compile: load and compile", shared=True):
                    self._trusted(session, "load", timeout=_load_timeout(), **self._load_fields("compile"))
                    self._trusted(session, "prepare_timing", seeds=self.set_seeds,
                                  copy_sets=self.ref_changes_inputs)
                    self._trusted(session, "warmup", timeout=_load_timeout(), calls=1, max_s=1.0)
            assert session is not None
            with self._device_lock(f"baseline {mode}"):
                allowance = self._tail_allowance(session)
                t = timing.run_timing(_TrustedTiming(self, session), device=self.device, n_sets=self.n_sets,
                                      tail_allowance_us=allowance)
            stats = {**t.stats, "device": self.device_model}
            if t.tail is not None:
                stats["tail_added_median_us"] = t.tail["added_median_us"]
            if self.device == "cuda":
                with self._device_lock(f"baseline {mode} kernel time"):
                    prof = self._trusted(session, "profile", seed=random.SystemRandom().randrange(1 << 31),
                                         calls=KERNEL_TIME_CALLS, warmup=KERNEL_TIME_WARMUP)
                value = prof.get("kernel_time_us")
                if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                    stats["kernel_time_us"] = float(value)
            return {k: v for k, v in stats.items() if not (isinstance(v, float) and math.isnan(v))}
        except (EvaluatorError, timing.TimingRejected) as e:
            _log(f"baseline {mode} failed: {e}")
            return {"error": str(e)[:2000]}


def work_outside_timer(wall_per_call_us: float, median_us: float) -> bool:
    """On a GPU: do back-to-back calls by the parent's clock take more than the timed calls can explain? Four times
    the median plus 200 us, and the head start's cap on top: the host's time in forward up to the flush plus the
    head start is outside the window by design (child.HEAD_START_MAX_US), so an honest host-bound forward's
    back-to-back calls exceed its window by up to that."""
    return wall_per_call_us > 4 * median_us + 200 + timing.HEAD_START_MAX_US


class _Background:
    """A function run on a thread; join() re-raises what it raised."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the joining thread
            self.error = e

    def join(self, swallow: bool = False) -> None:
        self.thread.join()
        if self.error is not None and not swallow:
            error, self.error = self.error, None
            raise error


class _UntrustedTiming:
    """Adapts the untrusted session's requests to timing.run_timing, with verdicts for failures."""

    def __init__(self, run: _Run, session: Session) -> None:
        self.run, self.session = run, session

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        return self.run._untrusted(self.session, op, f"timing ({op})", **fields)


class _TrustedTiming(_UntrustedTiming):
    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        timeout = _load_timeout() if op == "warmup" else None  # torch.compile compiles on the first calls
        return self.run._trusted(self.session, op, timeout=timeout, **fields)


def evaluate_files(problem: Path, solution: Path, **kwargs: Any) -> dict:
    return evaluate(problem.read_text(), solution.read_text(), **kwargs)
