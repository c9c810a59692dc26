"""The trusted reference's side of one evaluation (`Reference`): it loads the problem's Model, plans the memory
(before any input exists, then from the measured footprint), runs the correctness trials whose outputs the
solution's are compared with (and their float64 runs, for the precision rule), checks that the Model is
deterministic, and prepares the timing input sets. What its trials found is one frozen value, `ReferenceData`,
which a warm pool keeps for the next evaluation of the same problem.
"""

from __future__ import annotations

import hashlib
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_runner import correctness, gpulock, memory_ledger, memory_plan, sandbox, sysinfo, timing
from gpu_runner.context import SLOT_MARGIN, Context
from gpu_runner.session import EvaluatorError, Session, Verdict, address_space_ceiling, trusted

# Memory for the K timing input sets (each set lives in the solution's and the reference's process).
SETS_BUDGET = {"cuda": 8 << 30, "cpu": 512 << 20}
MIN_SETS, MAX_SETS = 2, 16  # with memory to spare; the memory plan goes down to 1 where it is short


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


def derived_seed(seed: int, what: str, i: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{what}:{i}".encode()).digest()[:4], "big") & 0x7FFFFFFF


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


class Reference:
    """The reference's child (role eager) and what it computed; the phases after it read its attributes."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.n_trials = max(correctness.MIN_TRIALS, ctx.settings.trials)
        self.session: Session | None = None
        self.expected_mode = "memory"  # or "on_demand": outputs too large to keep, computed just before each trial
        self.sizes_before_trials: dict[str, int] | None = None
        self.footprint_source = ""  # where sizes_before_trials came from: "cached" or "meta"
        self.free_at_start: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
        self.plan: memory_plan.Plan | None = None
        self.param_bytes = 0  # the Model's parameters and buffers, as the reference's load found them
        # What the trials found (adopt), with the on-demand trials' filled in as they come.
        self.trial_seeds: list[int] = []
        self.sample_seeds: list[int] = []
        self.expected: list[list[Any] | None] = []
        self.ground_truth: list[list[Any] | None] = []
        self.fp64_notes: list[str] = []
        self.structure: Any = None
        self.perturbable: list[Any] = []
        self.input_bytes = self.output_bytes = 0
        self.changes_inputs = False
        self.footprint: dict[str, int] | None = None
        # Set once the first trial has measured the footprint, or once the reference's outputs phase ends whatever
        # its end (the solution's limit on the CPU track may wait for it: solution_limit_from_measured).
        self.footprint_ready = threading.Event()
        self.measured_footprint: dict[str, int] | None = None
        # The timing input sets (_sets).
        self.n_sets = 0
        self.set_seeds: list[int] = []
        self.expected_sets: list[list[Any]] = []

    def start(self) -> Session:
        self.session = self.ctx.session("eager")
        return self.session

    def drop_outputs(self) -> None:
        """Once the evaluation ends: let go of the expected outputs, float64 runs and timing sets' outputs this
        process holds (a pool's cached copy, ReferenceData, keeps its own lists)."""
        self.expected, self.ground_truth, self.expected_sets = [], [], []

    def outputs(self) -> None:
        """The trials' expected outputs (or the pool's copy), then the clock audit's one-time costs."""
        try:
            with self.ctx.device_lock("reference trials", shared=True):
                self.outputs_held()
        finally:
            self.footprint_ready.set()
        # While the solution's child still loads: the clock audit's one-time costs in this trusted process
        # (child.op_warm_audit), which its first null call paid inside the timing stage.
        assert self.session is not None
        with self.ctx.timed("reference_warm_audit"):
            trusted(self.session, "warm_audit", timeout=self.ctx.settings.load_timeout_s)

    def plan_before_trials(self) -> None:
        """Load the reference, work out the problem's footprint (cached from an earlier evaluation on this device
        model, else from the shapes on the meta device), and refuse at once what cannot fit."""
        ref = self.session
        assert ref is not None
        with self.ctx.device_lock("reference load", shared=True), self.ctx.timed("reference_load"):
            loaded = trusted(ref, "load", timeout=self.ctx.settings.load_timeout_s, **self.ctx.load_fields("eager"))
        info = loaded.get("info")
        self.param_bytes = int(info.get("param_bytes") or 0) if isinstance(info, dict) else 0
        self.ctx.device_model = sysinfo.device_model(self.ctx.device)
        self.free_at_start = (memory_plan.host_free(self.ctx.settings),
                              memory_plan.device_free(self.ctx.device, self.ctx.settings))
        cached = memory_plan.load_footprint(self.ctx.result.problem_hash, self.ctx.device_model)
        if cached is not None:
            sizes, source = cached, "cached"
        else:
            reply = trusted(ref, "footprint", seed=self.ctx.seed)
            i_b, o_b = reply.get("input_bytes"), reply.get("output_bytes")
            if type(i_b) is not int:
                self.ctx.result.checks["memory_plan"] = {"before_trials": f"no footprint: {reply.get('why')}"}
                return
            # An output the meta device cannot work out counts as nothing here: a refusal must be certain.
            sizes = {"input_bytes": i_b, "output_bytes": o_b if type(o_b) is int else 0, "peak_bytes": 0}
            source = "meta"
        self.sizes_before_trials, self.footprint_source = sizes, source
        p = self.make_plan(sizes["input_bytes"], sizes["output_bytes"], sizes["peak_bytes"], source)
        self.ctx.result.checks["memory_plan"] = {"before_trials": p.record()}
        if not p.fits and not memory_ledger.held_by_others(self.ctx.settings).holders:
            raise Verdict("runtime_error", p.message)
        # Where other evaluations on the host hold memory, a plan short of it is not refused yet: the free memory
        # it read lacks what they allocated, and the ledger waits for them where it fits once they end.
        reserved = self._reserve(sizes, source)
        if self.ctx.limit_from_plan():
            # The solution's child has not loaded yet: its address-space limit, sent with its load, from this plan
            # (from the measured footprint instead where this one comes from the shapes: limit_waits_for_footprint).
            self._set_solution_limit(reserved, source)

    def _set_solution_limit(self, p: memory_plan.Plan, source: str, *, only_higher: bool = False) -> None:
        """The solution's limit from plan `p` (memory_plan.solution_address_space), recorded with where its
        footprint came from; only_higher: kept as it is where `p` gives no more."""
        limit = memory_plan.solution_address_space(p, self.ctx.settings.child_memory_bytes(),
                                                   address_space_ceiling(self.ctx.settings))
        if only_higher and limit <= (self.ctx.solution_memory_bytes or 0):
            return
        self.ctx.solution_memory_bytes = limit
        self.ctx.result.checks.setdefault("memory_plan", {})["solution_address_space"] = {
            "bytes": limit, "from": source, "solution_child_needs": p.needs.get("solution_child", 0)}

    def limit_waits_for_footprint(self) -> bool:
        """Whether the solution's load waits for the first trial's measured footprint: on the CPU track where the
        plan sets the solution's limit and the footprint before the trials is not a measured one (from the shapes,
        which show no temporaries, or none at all). The limit cannot be raised once the solution runs, and a
        limit below what the same work needs would fail an honest solution. Once per problem and device model:
        later evaluations plan from the cached footprint."""
        sizes = self.sizes_before_trials
        return self.ctx.limit_from_plan() and (sizes is None or self.footprint_source != "cached")

    def solution_limit_from_measured(self) -> None:
        """After footprint_ready: the solution's limit from the plan made on the measured footprint, where it is
        higher than the one from the shapes (never lower: the first plan's reservation stands)."""
        fp = self.measured_footprint
        if fp is None:
            return
        p = self.make_plan(fp["input_bytes"], fp["output_bytes"], fp["peak_bytes"], "measured")
        self._set_solution_limit(p, "measured", only_higher=True)
        self.ctx.result.checks.setdefault("memory_plan", {}).setdefault("solution_address_space", {})[
            "measured_needs"] = p.needs.get("solution_child", 0)

    def _reserve(self, sizes: dict[str, Any], source: str, *,
                 reading: tuple[dict[str, Any], dict[str, Any]] | None = None,
                 record_as: str = "before_trials") -> memory_plan.Plan:
        """Beside the host's other evaluations (memory_ledger.py): plan from the free memory less what they
        reserved, waiting for them where this evaluation fits only alone, and reserve what the plan needs.
        reading: the free memory to plan from (else read now); record_as: the plan's key in
        checks.memory_plan. Returns the plan reserved."""
        settings = self.ctx.settings
        key = gpulock.device_key(self.ctx.device)
        plans: list[memory_plan.Plan] = []

        def attempt(others: memory_ledger.Held) -> tuple[bool, int, int]:
            host, gpu = reading if reading is not None else (
                memory_plan.host_free(settings), memory_plan.device_free(self.ctx.device, settings))
            self.free_at_start = (_less(host, others.host_bytes, by_others=True), _free_beside(gpu, others, key))
            p = self.make_plan(sizes["input_bytes"], sizes["output_bytes"], sizes["peak_bytes"], source)
            plans.append(p)
            return p.fits, p.needs.get("host", 0), device_to_reserve(self.ctx.device, source, p.needs.get("device", 0),
                                                                     self.free_at_start[1].get("free"))

        try:
            with self.ctx.timed("memory_wait"):
                r = memory_ledger.reserve(key, attempt, timeout_s=settings.gpu_lock_timeout_s,
                                          label=f"problem {self.ctx.result.problem_hash[:12]}", settings=settings,
                                          cancel=self.ctx.ending)
        except memory_ledger.MemoryWaitTimeout as e:
            raise EvaluatorError(str(e)) from None
        record = self.ctx.result.checks.setdefault("memory_plan", {})
        if r is None:  # short of memory with nobody to wait for: refused with the figures, as a plan alone is
            record[record_as] = plans[-1].record()
            back = [f"{f['free_once_others_end'] / (1 << 30):.1f} GiB of {kind}" for kind, f in
                    zip(("host memory", "GPU memory"), self.free_at_start, strict=True) if f.get("free_once_others_end")]
            gpu = self.free_at_start[1]
            note = (f" (counted as free: {' and '.join(back)} that other evaluations on this host hold now, as free "
                    "once they end)" if back else "")
            if gpu.get("whole_device_in_use") is not None:
                note = (f" (counted as free: the whole GPU, {gpu['free'] / (1 << 30):.1f} GiB, of which "
                        f"{gpu['whole_device_in_use'] / (1 << 30):.1f} GiB is in use now, by the other evaluations on "
                        "this host and anything else on the GPU)")
            raise Verdict("runtime_error", (plans[-1].message or "") + note)
        self.ctx.reservation = r
        record["reservation"] = r.record()
        if r.others.holders or record_as != "before_trials":
            record[record_as] = plans[-1].record()  # the plan beside the others is the one that counts
        return plans[-1]

    def _timing_plan(self) -> memory_plan.Plan:
        """The plan from the measured footprint, which may need more than the first plan reserved (a measured
        peak above the shapes' estimate) or be the first plan of all (no footprint before the trials), made
        beside the host's other evaluations as the first one was (memory_ledger.Reservation.replan). It may wait
        for them: the caller holds no lock of the device meanwhile."""
        fp = self.footprint
        sizes: dict[str, Any] = {"input_bytes": self.input_bytes, "output_bytes": self.output_bytes,
                                 "peak_bytes": fp["peak_bytes"] if fp else None}
        source = "measured" if fp else "unmeasured"
        record = self.ctx.result.checks.setdefault("memory_plan", {})
        r = self.ctx.reservation
        if r is None:
            # Nothing reserved yet (the footprint could not be worked out before the trials): reserve now, from
            # the free memory read before the trials, with everything the others reserved since counted.
            return self._reserve(sizes, source, reading=self.free_at_start, record_as="timing")
        base = self.free_at_start  # already less what the others had reserved when this evaluation reserved
        key = gpulock.device_key(self.ctx.device)
        plans: list[memory_plan.Plan] = []

        def attempt(grown: memory_ledger.Held) -> tuple[bool, int, int]:
            self.free_at_start = (_less(base[0], grown.host_bytes), _less(base[1], grown.on(key)))
            p = self.make_plan(sizes["input_bytes"], sizes["output_bytes"], sizes["peak_bytes"], source)
            if not p.fits and self.ctx.device == "cuda":
                # The reading at the reservation may be far below what is free now: it lacked what the others
                # had allocated then and, besides, what they had reserved (a plan from the shapes holds most of
                # the GPU until its trials), and neither comes back to it as they shrink or end. Plan again from
                # the GPU as it is now.
                fresh = self._gpu_free_now(grown, key)
                if fresh is not None and fresh["free"] > int(self.free_at_start[1].get("free") or 0):
                    self.free_at_start = (self.free_at_start[0], fresh)
                    p = self.make_plan(sizes["input_bytes"], sizes["output_bytes"], sizes["peak_bytes"], source)
            plans.append(p)
            return p.fits, p.needs.get("host", 0), p.needs.get("device", 0)

        try:
            with self.ctx.timed("memory_wait"):
                fits = r.replan(attempt, timeout_s=self.ctx.settings.gpu_lock_timeout_s, cancel=self.ctx.ending)
        except memory_ledger.MemoryWaitTimeout as e:
            raise EvaluatorError(str(e)) from None
        record["timing"] = plans[-1].record()
        record["reservation"] = r.record()
        if not fits:
            raise Verdict("runtime_error", plans[-1].message)
        return plans[-1]

    def _gpu_free_now(self, others: memory_ledger.Held, key: str) -> dict[str, Any] | None:
        """For a replan on a GPU: the memory free for this evaluation's whole plan, read now. The least of two
        counts: what NVML says is free plus what this evaluation's own processes hold (the plan counts all of it),
        and the whole GPU less everything the other evaluations hold in the ledger (others.held_now: more than
        they have allocated, where their plans have not filled yet). Where others.whole_device is set (would the
        plan fit once the others it may wait for end?), the second count alone: the GPU less what the rest hold.
        The reference's Model is counted out, as at the reservation (make_plan adds it back). None without a
        reading."""
        gpu = memory_plan.device_free(self.ctx.device, self.ctx.settings)
        if gpu.get("free") is None or not gpu.get("total"):
            return None
        ledger = _whole_gpu(gpu) - others.held_now.get(key, 0)
        watch = self.ctx.device_watch
        own = watch.own_bytes() if watch is not None else 0
        free = ledger if others.whole_device else min(int(gpu["free"]) + own, ledger)
        return {**gpu, "free": max(0, free - self.param_bytes), "read_again": {
            "nvml_free": int(gpu["free"]), "this_evaluation_holds": own, "others_hold": others.held_now.get(key, 0),
            **({"once_the_others_end": True} if others.whole_device else {})}}

    def _limit_notes(self) -> tuple[str, str]:
        """Where the children's address-space limits come from (memory_plan.plan's limit_notes)."""
        if not self.ctx.limit_from_plan():
            return memory_plan.FIXED_LIMIT_NOTE, memory_plan.FIXED_LIMIT_NOTE
        if self.ctx.result.checks.get("memory_plan", {}).get("solution_address_space"):
            return memory_plan.CEILING_NOTE, memory_plan.SET_AT_LOAD_NOTE
        return memory_plan.CEILING_NOTE, (memory_plan.FLOOR_NOTE if self.ctx.solution_memory_bytes
                                          else memory_plan.CEILING_NOTE)

    def make_plan(self, input_bytes: int, output_bytes: int, peak_bytes: int | None,
                  source: str) -> memory_plan.Plan:
        per_set = max(1, input_bytes + output_bytes)
        host, gpu = self.free_at_start
        # The free memory was read with the reference's Model loaded, which the plan counts in its child: as if
        # it were not.
        if self.ctx.device == "cuda":
            gpu = _less(gpu, -self.param_bytes)
        else:
            host = _less(host, -self.param_bytes)
        return memory_plan.plan(
            self.ctx.device, input_bytes=input_bytes, output_bytes=output_bytes, peak_bytes=peak_bytes, source=source,
            param_bytes=self.param_bytes, host=host, gpu=gpu,
            child_limits=(self.ctx.limits("eager").memory_bytes, self.ctx.solution_memory_limit()),
            limit_notes=self._limit_notes(),
            n_trials=self.n_trials,
            sets_wanted=max(MIN_SETS, min(MAX_SETS, SETS_BUDGET[self.ctx.device] // per_set)),
            keep_wanted=timing.batch_limits(self.ctx.device, output_bytes)[0],
            tmpfs_work=_tmpfs(sandbox.work_base(self.ctx.settings)),
            lent_outputs=(self.ctx.checks_per_batch(output_bytes) + (self.ctx.ipc_mode() == "capability"))
            if self.ctx.ipc_on() else 0)

    def outputs_held(self) -> None:
        ref = self.session
        assert ref is not None
        # The trials' expected outputs depend only on (problem, seed, device): a warm pool keeps them in this
        # trusted process's memory, out of the solution's reach, and the reference skips them.
        cache_key = (self.ctx.result.problem_hash, self.ctx.seed, self.ctx.device, self.n_trials)
        remembered = self.ctx.pool.references.get(cache_key) if self.ctx.pool is not None else None
        self.ctx.result.checks["reference_trials_cached"] = remembered is not None
        if remembered is not None:
            data = remembered
        else:
            sizes = self.sizes_before_trials
            o_b = int(sizes.get("output_bytes") or 0) if sizes else 0
            if (self.n_trials + 1) * o_b > memory_plan.EXPECTED_IN_MEMORY_BYTES:
                self.ctx.lend(ref, o_b + SLOT_MARGIN)  # one output a request; only as a capability slot
            with self.ctx.timed("reference_trials"):
                data = self.trials(ref)
            if self.ctx.pool is not None and data.expected_mode == "memory":
                self.ctx.pool.references.put(cache_key, data, data.nbytes())
        self.adopt(data)

    def adopt(self, data: ReferenceData) -> None:
        """The run works from the reference's data: its own copies of what the on-demand trials fill in later
        (expected outputs, float64 runs, notes, whether the forward changes its inputs); the rest as it is."""
        self.trial_seeds, self.sample_seeds = list(data.trial_seeds), list(data.sample_seeds)
        self.expected, self.ground_truth = list(data.expected), list(data.ground_truth)
        self.fp64_notes = list(data.fp64_notes)
        self.structure, self.perturbable = data.structure, data.perturbable
        self.input_bytes, self.output_bytes = data.input_bytes, data.output_bytes
        self.changes_inputs, self.footprint = data.changes_inputs, data.footprint
        self.expected_mode = data.expected_mode

    def timed_sets(self) -> None:
        """The timing plan (before this thread holds the device: it may wait for other evaluations to end; the
        main thread's trials, beside it, hold the device shared and end on their own), then the timing input sets
        under the device's shared lock."""
        assert self.session is not None
        with self.ctx.timed("reference_sets"):
            self.plan = self._timing_plan()
            with self.ctx.device_lock("reference sets", shared=True):
                self._sets(self.session)

    def trials(self, ref: Session) -> ReferenceData:
        trial_seeds = [derived_seed(self.ctx.seed, "trial", i) for i in range(self.n_trials)]
        # Read by _fp64_file and _truth_of while the trials run.
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
                # Computed just before the solution's trial i (expected_trial).
                expected.append(None)
                ground_truth.append(None)
                continue
            if i == 0:
                before = trusted(ref, "memory", reset=True)
            reply = trusted(ref, "trial", seed=s, file=f"ref_trial_{i}.pt", fp64_file=self._fp64_file(i),
                            sample_seed=sample_seeds[i])
            if i == 0:
                after = reply.get("memory_after_call") or trusted(ref, "memory")
                footprint = self._measure_footprint(reply, before, after)
                self.measured_footprint = footprint
                self.footprint_ready.set()
            if reply["problems"]:
                raise EvaluatorError(f"the problem's Model output is unusable: {'; '.join(reply['problems'])}")
            outputs = ref.tensors(f"ref_trial_{i}.pt", trusted=True)
            expected.append(outputs)
            (ref.workdir / f"ref_trial_{i}.pt").unlink(missing_ok=True)
            ground_truth.append(self._truth_of(ref, i, reply))
            structure = reply["structure"]
            changes_inputs |= bool(reply.get("changed_inputs"))
            unusable = correctness.reference_problems(outputs, self.ctx.meta, self.ctx.device)
            if unusable:
                raise EvaluatorError(f"the problem cannot judge solutions (trial {i + 1}): {'; '.join(unusable)}")
            if i == 0:
                self._check_deterministic(ref, s, outputs, structure)
            perturbable = reply["perturbable"] if self.ctx.meta.get("perturb_timed_inputs", True) else []
            input_bytes, output_bytes = int(reply["input_bytes"]), int(reply["output_bytes"])
            # On demand, trial 0's outputs are the one set kept: the solution's first trial compares with them,
            # and the parent holds no more at a time than the determinism check just did (two). Computing them
            # again had been a whole reference trial of a 6 GiB problem. checks.trials lets them go once used.
        return ReferenceData(
            trial_seeds=tuple(trial_seeds), sample_seeds=tuple(sample_seeds), expected=tuple(expected),
            ground_truth=tuple(ground_truth), fp64_notes=tuple(self.fp64_notes), structure=structure,
            perturbable=perturbable, input_bytes=input_bytes, output_bytes=output_bytes,
            changes_inputs=changes_inputs, footprint=footprint, expected_mode=self.expected_mode)

    def _measure_footprint(self, reply: dict[str, Any], before: dict[str, Any],
                           after: dict[str, Any]) -> dict[str, int]:
        """The reference's own peak in its first trial, cached for later evaluations on this device model; and
        where the trials' expected outputs live (memory_plan.py)."""
        if self.ctx.device == "cuda":
            peak = int(after.get("cuda_peak_bytes", 0)) - int(before.get("cuda_allocated_bytes", 0))
        else:
            peak = int(after.get("vmhwm_bytes", 0)) - int(before.get("vmrss_bytes", 0))
        footprint = {"input_bytes": int(reply["input_bytes"]), "output_bytes": int(reply["output_bytes"]),
                     "peak_bytes": max(0, peak)}
        memory_plan.store_footprint(self.ctx.result.problem_hash, self.ctx.device_model, footprint)
        if (self.n_trials + 1) * footprint["output_bytes"] > memory_plan.EXPECTED_IN_MEMORY_BYTES:
            self.expected_mode = "on_demand"
        return footprint

    def _fp64_file(self, i: int) -> str | None:
        """Where trial i's float64 run goes, or None where the precision rule's run is skipped: it doubles the
        reference's memory (a float64 copy of the model, the inputs and the outputs), so it runs only where the
        memory plan keeps the expected outputs in memory (the footprint known before the trials)."""
        sizes = self.sizes_before_trials
        if sizes and (self.n_trials + 1) * int(sizes.get("output_bytes") or 0) > memory_plan.EXPECTED_IN_MEMORY_BYTES:
            note = ("skipped: the outputs are over the memory plan's in-memory bound, and a float64 run would double "
                    "the reference's memory")
            if note not in self.fp64_notes:
                self.fp64_notes.append(note)
            return None
        return f"ref64_trial_{i}.pt"

    def _truth_of(self, ref: Session, i: int, reply: dict[str, Any]) -> list[Any] | None:
        """Trial i's float64 run (precision.py), read from the reference's file, or None with the reason noted."""
        if reply.get("fp64"):
            truth = ref.tensors(f"ref64_trial_{i}.pt", trusted=True)
            (ref.workdir / f"ref64_trial_{i}.pt").unlink(missing_ok=True)
            return truth
        if "fp64" in reply:  # asked for, and not done: the child says why (not asked: _fp64_file noted why)
            self.fp64_notes.append(str(reply.get("fp64_note") or "no float64 run"))
        return None

    def expected_trial(self, i: int) -> list[Any]:
        """Trial i's expected outputs: kept from the reference's trials, or computed by it now (on_demand)."""
        kept = self.expected[i]
        if kept is not None:
            return kept
        ref = self.session
        assert ref is not None
        with self.ctx.timed("reference_trials"):
            reply = trusted(ref, "trial", seed=self.trial_seeds[i], file=f"ref_trial_{i}.pt",
                            fp64_file=self._fp64_file(i), sample_seed=self.sample_seeds[i])
            if reply["problems"]:
                raise EvaluatorError(f"the problem's Model output is unusable: {'; '.join(reply['problems'])}")
            self.ground_truth[i] = self._truth_of(ref, i, reply)
            if reply.get("structure") != self.structure:
                raise EvaluatorError(f"the problem's Model returned {reply.get('structure')} in trial {i + 1}, "
                                     f"{self.structure} in the first")
            self.changes_inputs |= bool(reply.get("changed_inputs"))
            expected = ref.tensors(f"ref_trial_{i}.pt", trusted=True)
            (ref.workdir / f"ref_trial_{i}.pt").unlink(missing_ok=True)
            unusable = correctness.reference_problems(expected, self.ctx.meta, self.ctx.device)
            if unusable:
                raise EvaluatorError(f"the problem cannot judge solutions (trial {i + 1}): {'; '.join(unusable)}")
        return expected

    def _sets(self, ref: Session) -> None:
        """The timing input sets of the plan (fresh seeds) and, where the timed calls are not perturbed, their
        expected outputs."""
        assert self.plan is not None
        self.n_sets = self.plan.n_sets
        rng = random.SystemRandom()
        # Fresh seeds every evaluation: nothing a solution saw before can match these inputs.
        self.set_seeds = [rng.randrange(1 << 31) for _ in range(self.n_sets)]
        # A forward that changes its inputs in place gets a fresh copy of its input set at every call.
        trusted(ref, "prepare_timing", seeds=self.set_seeds, copy_sets=self.changes_inputs)
        self.expected_sets = []
        if not self.perturbable and self.expected_mode == "memory":
            # Only unperturbed timed calls are checked against these; perturbed ones are replayed (check_batch).
            trusted(ref, "set_outputs", prefix="ref_set_")
            self.expected_sets = [ref.tensors(f"ref_set_{k}.pt") for k in range(self.n_sets)]
        self.ctx.result.checks.update({"trials": self.n_trials, "timing_input_sets": self.n_sets,
                                       "input_bytes": self.input_bytes, "output_bytes": self.output_bytes})

    def _check_deterministic(self, ref: Session, seed: int, first: list[Any], structure: Any) -> None:
        """The same inputs again, from another random state: the outputs must agree within the tolerances."""
        reply = trusted(ref, "trial", seed=seed, rng_seed=derived_seed(self.ctx.seed, "rerun", 0),
                        file="ref_trial_again.pt")
        again = ref.tensors("ref_trial_again.pt", trusted=True) if not reply["problems"] else []
        (ref.workdir / "ref_trial_again.pt").unlink(missing_ok=True)
        cmp = correctness.compare(first, again, self.ctx.meta, self.ctx.device)
        if reply.get("structure") != structure or not cmp.ok:
            differs = cmp.message if reply.get("structure") == structure else \
                f"the output is {reply.get('structure')}, then {structure}"
            raise EvaluatorError(
                "the problem's Model is not deterministic: two runs on the same inputs disagree "
                f"({differs}). Its forward draws random numbers (torch.rand*, dropout in training mode) or keeps "
                "state between calls, so no solution could match it; fix the problem (call self.eval() in "
                "__init__, or take the random values as inputs from get_inputs)")

    def poison_bytes(self) -> int:
        """How much memory the solution's child poisons before each call that saves outputs."""
        return int(min(2 * self.output_bytes + (1 << 20), 1 << 30))


def device_to_reserve(device: str, source: str, need: int, free: int | None) -> int:
    """The GPU memory a plan reserves in the memory ledger: its need, or, where its footprint comes from the shapes
    on the meta device (source "meta": the problem's first evaluation on this device model), every byte it counts
    as free. The shapes show no temporaries, so such a plan can fall far short, and an evaluation beside it can
    run out of memory: on an H100 (2026-12-06 22:07-22:10), KernelBench's 5 and 96 ended `runtime_error` in their
    trials beside another job (the messages were not kept; most likely out of memory) and were accepted alone.
    The trials then measure the footprint, and the timing plan
    (Reservation.replan) reserves the measured need, so evaluations beside it wait only through the reference's
    load and the trials."""
    if device != "cuda" or source != "meta" or free is None:
        return need
    return max(need, int(memory_plan.USABLE_SHARE * free))


def _free_beside(gpu: dict[str, Any], others: memory_ledger.Held, key: str) -> dict[str, Any]:
    """The GPU's free memory as a plan beside the host's other evaluations counts it: less what they reserved on
    this GPU, or plus it (given back), or, where the ledger asks whether the plan fits once every other process
    on the GPU ends (Held.whole_device), the whole GPU (its total, or the cap KERNELHUB_DEVICE_MEMORY_GB sets)."""
    if not others.whole_device or gpu.get("free") is None or not gpu.get("total"):
        return _less(gpu, others.on(key), by_others=True)
    whole = _whole_gpu(gpu)
    return {**gpu, "free": whole, "whole_device_in_use": max(0, whole - int(gpu["free"]))}


def _whole_gpu(gpu: dict[str, Any]) -> int:
    """The whole GPU as a plan may count it: its total memory, or the cap KERNELHUB_DEVICE_MEMORY_GB sets."""
    whole = int(gpu["total"])
    if gpu.get("capped_by_env") is not None:
        whole = min(whole, int(gpu["capped_by_env"]))
    return whole


def _less(free: dict[str, Any], reserved: int, *, by_others: bool = False) -> dict[str, Any]:
    """A reading of free memory (memory_plan.host_free, device_free) less what other evaluations reserved
    (by_others), or plus (reserved < 0) what they reserved, as free once they end (memory_ledger.Held.given_back),
    or what this evaluation already holds and the plan counts given back (the reference's Model)."""
    if free.get("free") is None or reserved == 0:
        return free
    key = (("reserved_by_others" if reserved > 0 else "free_once_others_end") if by_others
           else "held_by_the_reference_model")
    return {**free, "free": max(0, int(free["free"]) - reserved), key: int(free.get(key) or 0) + abs(reserved)}
