"""What every phase of one evaluation works with (`Context`): its inputs and settings, the result it fills in, its
child processes, and the few things every phase does alike (stages and their seconds, the host's device lock,
starting a child, device memory lent for outputs). The phases themselves are the modules that take it:
reference.py (the expected outputs and the memory plan), checks.py (the solution's trials), solution_timing.py
(the timed calls and what can still reject), baseline_timing.py (eager and torch.compile); evaluate.py runs them
in order.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from gpu_runner import config, contract, gpulock, ipc, timing, workdir
from gpu_runner.result import EvaluationResult
from gpu_runner.session import EvaluatorError, Session, address_space_ceiling, limits, trusted, untrusted

SLOT_MARGIN = 64 * ipc.ALIGN  # room for the alignment of an output's tensors in a lent slot
# The longest an exclusive phase waits for the warm pool's next processes to finish starting (torch's import):
# past it they are closed, and the next job starts its own.
SPARES_SETTLE_S = 120.0


def log(msg: str) -> None:
    print(f"kernelhub: {msg}", file=sys.stderr, flush=True)


class Context:
    def __init__(self, problem_source: str, solution_source: str, meta: dict[str, Any], device: str, seed: int,
                 on_stage: Callable[[str], None] | None, result: EvaluationResult,
                 settings: config.RunnerConfig | None = None) -> None:
        self.settings = settings or config.RunnerConfig.from_env()
        self.problem_source, self.solution_source, self.meta = problem_source, solution_source, meta
        self.device, self.seed, self.on_stage, self.result = device, seed, on_stage, result
        self.sessions: list[Session] = []  # the children still running
        self.all_sessions: list[Session] = []
        self.started = time.monotonic()
        self.pool: Any = None  # a gpu_runner.warm.WarmPool
        self.spares_starting = False  # the pool's next processes were started during this evaluation (settle)
        self.device_model = ""  # set by the memory plan, before the trials (reference.Reference.plan_before_trials)
        # What the memory plan reserved in the host's ledger (memory_ledger.py), released when the run is closed.
        self.reservation: Any = None
        # The solution child's address-space limit on the CPU track, sent with its load (load_fields): from the
        # plan before the trials (memory_plan.solution_address_space), else KERNELHUB_CHILD_MEMORY_GB's figure.
        self.solution_memory_bytes: int | None = None
        # Set once the run is being closed: a memory wait on another thread gives up (memory_ledger's cancel).
        self.ending = threading.Event()
        self.open_stages: list[str] = []  # the timed stages under way, on any thread (memory_plan.DeviceUsedWatch)
        self.device_watch: Any = None  # that watch, on a GPU: what this evaluation's processes hold (own_bytes)
        self.child_versions: dict[str, Any] = {}  # the solution's child's versions of torch & co, once it loaded
        # KERNELHUB_PAUSE_SOLUTION: the solution's child runs only inside its requests and this evaluation's timed
        # phases (solution_turn); the device lock's holds of each thread, and the exclusive ones of any thread.
        self.pause_solution = self.settings.pauses_solution(device)
        self._thread_holds = threading.local()
        self._solution_running = 0  # timed phases of the solution under way (device_lock's solution_runs)
        self.trials_passed = False
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

    # ----- stages and where the time goes -----
    def stage(self, name: str) -> None:
        # When each stage began, seconds from the start: where an evaluation's time goes.
        self.result.checks.setdefault("stage_started_s", {})[name] = round(time.monotonic() - self.started, 3)
        log(f"stage {name}")
        # Only the contract's stages go out (the site knows no others); "baselines" is for the record.
        if self.on_stage is not None and name in contract.RUNNER_STAGES:
            self.on_stage(name)

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Adds the seconds spent inside to result.stage_seconds[name]: where an evaluation's time goes."""
        t0 = time.monotonic()
        self.open_stages.append(name)
        try:
            yield
        finally:
            self.open_stages.remove(name)
            spent = self.result.stage_seconds
            spent[name] = round(spent.get(name, 0.0) + time.monotonic() - t0, 3)

    @contextlib.contextmanager
    def device_lock(self, phase: str, *, shared: bool = False, solution_runs: bool = False) -> Iterator[None]:
        """Hold the host-wide lock of this device (gpulock.py): exclusive while `phase` times, shared while it
        uses the device without timing; the wait is recorded, and counts against no child's deadline.
        solution_runs: an exclusive phase that times the solution, in which a solution paused between its requests
        (solution_turn) runs throughout."""
        holds: list[gpulock.Hold] = []
        depth = getattr(self._thread_holds, "depth", 0)
        running = solution_runs and not shared
        if not shared and self.spares_starting and self.pool is not None:
            # No import of the next job's processes (started early, evaluate.py) beside a timed phase.
            with self.timed("spares_settle"):
                self.pool.settle(SPARES_SETTLE_S)
            self.spares_starting = False
        try:
            with gpulock.held(self.device, phase=phase, shared=shared,
                              timeout=self.settings.gpu_lock_timeout_s) as hold:
                holds.append(hold)
                for s in self.sessions:
                    s.lock_wait_s += hold.waited_s
                self._thread_holds.depth = depth + 1
                if running:
                    self._solution_running += 1
                    for s in self._paused_sessions():
                        s.resume()  # this evaluation's timed phase: nobody else's runs now
                error: BaseException | None = None
                try:
                    yield
                except BaseException as e:
                    error = e
                    raise
                finally:
                    self._thread_holds.depth = depth
                    if running:
                        self._solution_running -= 1
                        if not self._solution_running:
                            self._pause_after_timed_phase(error)
        except gpulock.GpuLockTimeout as e:
            raise EvaluatorError(str(e)) from None
        finally:
            for h in holds:  # wall-clock times, comparable across the evaluations of a host
                self.result.checks.setdefault("device_lock", []).append({
                    "phase": phase, "device": h.device, "shared": h.shared, "waited_s": round(h.waited_s, 3),
                    "held_from": round(h.acquired_at, 4), "held_until": round(h.released_at or 0.0, 4)})

    # ----- the solution paused between its requests (KERNELHUB_PAUSE_SOLUTION) -----
    def _paused_sessions(self) -> list[Session]:
        return [s for s in self.sessions if s.turn is not None]

    @contextlib.contextmanager
    def solution_turn(self, s: Session, op: str) -> Iterator[dict[str, Any]]:
        """What a request to the solution's child runs inside where it is paused between requests: the device lock
        (shared, unless this thread holds it already), the child continued for the request and stopped after it,
        its device work finished first (`quiesce`) and the stop seen in every thread before the lock is let go.
        Inside this evaluation's own timed phase (device_lock with solution_runs) the child runs throughout, as
        without pausing: nobody else's evaluation runs on the device then, and a stop and continue between timed
        requests would fall in the clock audit's figures. So no code of the solution runs while another evaluation
        holds the device alone, and no kernel it queued before its reply is left running: beside other evaluations
        (KERNELHUB_GPU_JOBS above 1), what it starts at import or leaves behind cannot slow another solution's timed
        calls (one gap: docs/RUNNERS.md)."""
        if self._solution_running:
            yield {}
            return
        hold = (self.device_lock(f"solution {op}", shared=True) if not getattr(self._thread_holds, "depth", 0)
                else contextlib.nullcontext())
        with hold:
            s.resume()
            try:
                yield {"quiesce": True}
            finally:
                self._pause(s)

    def _pause(self, s: Session) -> None:
        s.pause()
        self.result.checks["solution_paused"] = {"pauses": s.pauses}

    def _pause_after_timed_phase(self, error: BaseException | None) -> None:
        """The end of this evaluation's timed phase, the device still held alone: the solution's device work
        finished (a request of its own, outside solution_turn: this thread holds the lock), then it is stopped. A
        solution that cannot finish it in a request's time gets the verdict. Where the phase ended in an error
        (a verdict on its way, or a request that timed out with the child still busy) it is stopped at once."""
        for s in self._paused_sessions():
            if s.paused or not s.child.alive():
                continue
            turn, s.turn = s.turn, None
            try:
                if error is None:
                    untrusted(s, "ping", "its device work after its timed calls", quiesce=True)
            finally:
                s.turn = turn
                self._pause(s)

    # ----- the children -----
    def limits(self, role: str, *, gpu: bool = True) -> Any:
        return limits(self.device, role, gpu=gpu, settings=self.settings)

    def limit_from_plan(self) -> bool:
        """Whether the memory plan sets the solution's address-space limit: the CPU track, KERNELHUB_CHILD_MEMORY_GB
        unset (config.RunnerConfig.child_memory_from_plan)."""
        return self.device == "cpu" and self.settings.child_memory_from_plan()

    def solution_memory_limit(self) -> int | None:
        """The solution child's address-space limit as the memory plan counts it: on the CPU track, where the plan
        sets it (KERNELHUB_CHILD_MEMORY_GB unset), the figure sent with its load or, before that, the ceiling it
        starts with; else the fixed limit (None on a GPU, where the driver maps huge virtual ranges)."""
        if self.limit_from_plan():
            return self.solution_memory_bytes or address_space_ceiling(self.settings)
        return self.limits("solution").memory_bytes

    def session(self, role: str, on_build: Callable[[Any], dict[str, Any]] | None = None, *,
                gpu: bool = True) -> Session:
        """A child for `role` (eager, compile, solution): a pre-started one from the pool where it has one."""
        s = self.pool.take(role) if self.pool is not None and gpu else None
        if s is None:
            s = Session(role, device=self.device, limits_=self.limits(role, gpu=gpu), on_build=on_build,
                        settings=self.settings)
        else:
            s.begin(on_build, self.settings)
        self.result.checks.setdefault("prestarted", {})[role] = s.prestarted
        if role == "solution" and self.pause_solution and gpu:  # (a build slot's child has no GPU to share)
            s.turn = self.solution_turn
        self.sessions.append(s)
        self.all_sessions.append(s)
        (s.workdir / "problem.py").write_text(self.problem_source)
        if role == "solution":
            (s.workdir / "solution.py").write_text(self.solution_source)
        return s

    def stop(self, s: Session) -> None:
        s.close()
        self.sessions.remove(s)

    def load_fields(self, role: str) -> dict[str, Any]:
        policy = {k: self.meta[k] for k in ("allow_torch",) if k in self.meta}
        fields = {"device": self.device, "seed": self.seed, "problem_file": "problem.py",
                  "solution_file": "solution.py" if role == "solution" else None, "policy": policy}
        if role == "solution" and self.workdir is not None:
            fields["extension"] = {"name": workdir.EXTENSION_NAME}
        if role == "solution" and self.device == "cpu":
            # The harness sets its process's address-space limit to this before it imports the solution (never
            # above the limit it started with): the plan's figure, or the floor where no plan was made before the
            # load (a problem whose footprint the meta device cannot work out; a build ahead).
            if self.solution_memory_bytes is None:
                self.solution_memory_bytes = self.settings.child_memory_bytes()
            fields["memory_bytes"] = self.solution_memory_bytes
        return fields

    def close(self) -> list[int]:
        """Stop every child still running; the pids of processes that had escaped their group."""
        escaped: list[int] = []
        for s in self.sessions:
            escaped += s.close()
        return escaped

    def record_op_seconds(self) -> None:
        """Per child and op, [requests, seconds]: once no thread of this evaluation makes requests any more."""
        self.result.op_seconds = {s.role: {op: [int(n), round(t, 3)] for op, (n, t) in s.op_seconds.items()}
                                  for s in self.all_sessions}

    # ----- device memory lent for outputs (ipc.py) -----
    def ipc_mode(self) -> str:
        """KERNELHUB_OUTPUT_IPC: `capability` (the default) capability slots (ipc.CapabilitySlot) for the solution's
        and the reference's outputs; `1` a legacy-handle slot for the solution's alone; `0` files only."""
        return self.settings.output_ipc

    def ipc_on(self) -> bool:
        return self.device == "cuda" and self.ipc_mode() != "0"

    def checks_per_batch(self, output_bytes: int) -> int:
        return timing.batch_limits(self.device, output_bytes)[1]

    def lend(self, s: Session, nbytes: int) -> None:
        """Device memory for a child's outputs (ipc.py), where they are too large to keep (on demand); the way they
        went, in checks.output_transfer. The trusted reference gets one only as a capability slot: a legacy
        CUDA IPC handle is not a capability (whoever has its bytes can open the allocation), so a slot of its
        holding expected outputs could be read, or written, by the solution; its outputs then go through files."""
        capability = self.ipc_mode() == "capability"
        if not self.ipc_on() or nbytes <= 0 or (s.role != "solution" and not capability):
            return
        if s.role == "solution":
            def offer(**fields: Any) -> dict[str, Any]:
                return untrusted(s, "ipc_slot", "mapping the lent memory", **fields)
        else:
            def offer(**fields: Any) -> dict[str, Any]:
                return trusted(s, "ipc_slot", **fields)
        with self.timed("output_slots"):
            outcome = s.lend_slot(nbytes, offer, capability=capability)
        self.result.checks.setdefault("output_transfer", {})[s.role] = outcome


class Background:
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
