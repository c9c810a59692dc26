"""Timing statistics and the adaptive timing loop the parent drives in a child.

Each timed call runs on a fresh input set from a rotation of K sets made before the loop (more sets than a
cache could usefully key on), after poisoning the allocator and flushing the cache (twice the GPU's L2;
16 MiB on a CPU). On CUDA the window is a plain event timing (events right around forward, the flush queued
just before); a device-wide synchronise after it measures any work left running on another stream, and what
of it exceeds the synchronise's own latency on this device (the tail allowance) is added to the call's time. Repetitions go on in batches until the relative standard error of the mean is under
TARGET_RSE, or the budget is spent. The parent checks a random sample of each batch's outputs, picked after
the batch ran, against the expected outputs, and times one back-to-back batch with its own clock.
"""

from __future__ import annotations

import contextvars
import math
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

from gpu_runner import config
from gpu_runner.sandbox import busiest_thread_us, faults_between

TARGET_RSE = 0.01
MIN_REPS = 20
# The loop's most calls and its budget in seconds per device: config.RunnerConfig's max_reps and timing_budget().
# Between timed calls on a GPU the child waits for the next request polling, not asleep (child.Harness._stay_awake):
# every request of the timing loop says the next follows within this many seconds, and each batch begins with a
# ping that wakes the child first. Not on a CPU, where a polling child would take a core from the calls it times.
AWAKE_S = {"cuda": 1.0, "cpu": 0.0}
# A repeat call on an input set more than this much faster than the first call on it looks like memoisation.
MEMO_RATIO = 0.5
# One timed call in FRESH_ONE_IN (a quarter of each batch, rounded up, at random positions chosen by the parent,
# or, where calls go in runs, one block of them at a random place:
# the first two batches hold at least FRESH_MIN_CALLS of them) first regenerates its input set with the
# problem's get_inputs and a fresh seed. The other calls see inputs that differ from an earlier call in one
# element, which a kernel could exploit by recomputing only what changed (memoisation by difference): the
# outputs are right, the time is not. Such a kernel is slow on the fresh calls; an honest one takes the same
# time on both, so the calls on reused sets must not be faster than FRESH_RATIO x a lower bound of the fresh
# calls' median.
FRESH_ONE_IN = 4
FRESH_RATIO = 0.75
FRESH_MIN_CALLS = 5


def summarize(times_us: list[float]) -> dict[str, Any]:
    n = len(times_us)
    if not n:
        return {"n": 0}
    ordered = sorted(times_us)
    mean = statistics.fmean(ordered)
    std = statistics.stdev(ordered) if n > 1 else 0.0
    # Distribution-free 95% interval for the median: order statistics around n/2 (binomial, normal approx.).
    half = 0.98 * math.sqrt(n)
    lo = max(0, int(math.floor(n / 2 - half)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + half)))
    return {
        "n": n,
        "mean_us": mean,
        "std_us": std,
        "median_us": statistics.median(ordered),
        "min_us": ordered[0],
        "max_us": ordered[-1],
        "ci95_us": [ordered[lo], ordered[hi]],
        "rse": (std / math.sqrt(n) / mean) if mean > 0 and n > 1 else None,
    }


class TimingRejected(Exception):
    """The child's times contradict what the parent can observe; `rule` names how."""

    def __init__(self, rule: str, message: str, audit: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.rule, self.message, self.audit = rule, message, audit


def validate_times(value: Any, expected_len: int) -> list[float]:
    if not isinstance(value, list) or len(value) != expected_len:
        raise TimingRejected("timing_protocol", "the evaluation process returned a malformed list of times")
    out = []
    for t in value:
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t <= 0:
            raise TimingRejected("timing_protocol", f"the evaluation process returned an impossible time {t!r}")
        out.append(float(t))
    return out


# A checked batch keeps every output of the batch until the parent picks which to check: at most this many
# bytes of outputs at once (a batch is never shorter than MIN_BATCH calls). Of each batch, a third of the calls
# are checked, but not more than CHECK_BYTES of outputs: each check moves and compares the whole output, and
# with outputs of gigabytes a third of a batch cost minutes. Fewer checks still catch a cached or lazy result:
# the perturbed inputs make such a result wrong on every call, and the positions are drawn after the batch ran.
KEEP_BYTES = {"cuda": 16 << 30, "cpu": 1 << 30}
CHECK_BYTES = {"cuda": 2 << 30, "cpu": 256 << 20}
MIN_BATCH = 4


# The memory plan's cap on the outputs a checked batch keeps (gpu_runner/memory_plan.py), for the evaluation that
# runs in this thread; None: KEEP_BYTES alone decides. Below MIN_BATCH where memory is short, never below 2 (a
# batch needs a call on a fresh set and one on a reused set).
KEEP_CALLS: contextvars.ContextVar[int | None] = contextvars.ContextVar("kernelhub_keep_calls", default=None)


def batch_limits(device: str, output_bytes: int) -> tuple[int, int]:
    """(longest batch, most checks per batch) for outputs of output_bytes per call."""
    if output_bytes <= 0:
        return 100, 100
    longest = max(MIN_BATCH, min(100, KEEP_BYTES[device] // output_bytes))
    cap = KEEP_CALLS.get()
    if cap is not None:
        longest = max(2, min(longest, cap))
    return longest, max(1, CHECK_BYTES[device] // output_bytes)


# The parent's clock (the clock audit). Native code can rewrite the solution process's timers (its CUDA events,
# its perf_counter) and report any time it likes, so every timed call is its own request, timed by the parent.
# Right after each call on a reused set (recorded calls and fresh sets left out; at least AUDIT_MIN of them),
# the trusted reference repeats that call's harness work with a forward that does nothing (child.op_null_call),
# timed the same way while the solution's processes are stopped. A call's own time, by a clock the solution
# cannot touch, is then its request's wall time minus its null call's. Scheduling noise only adds time to
# either, so the audit takes a lower 95% confidence bound of the median of those differences (order statistics):
# on a quiet host it is close to the real time; on a loaded one it falls and the audit says less. The reported
# median must be at least CLOCK_RATIO x that bound, less CLOCK_SLACK_US and HARNESS_SHARE of the null call, or
# the times are rejected as forged: a forgery gains at most 1 / CLOCK_RATIO. The solution can only add time to
# its own requests, which raises the differences; it cannot lower the bound. The slack (per request: a run of n
# calls gives each call 1/n of it) covers what the null call lacks: the solution's process-wide guards (an audit
# hook) make its requests some 25 us costlier. On a CPU the clock is the busiest thread's CPU time plus its wait for
# a CPU (clock_audit), and the ratio is looser: CPU time is noisier under cache contention.
CLOCK_RATIO = {"cuda": 0.8, "cpu": 0.7}
CLOCK_SLACK_US = {"cuda": 60.0, "cpu": 300.0}
# And a tenth of the harness's own work per call (the null call's median): the solution's side of it is not
# exactly the null call's (its allocator holds a batch of outputs and may have to find memory for the next).
HARNESS_SHARE = 0.1
AUDIT_ONE_IN = 1  # every call on a reused set that the record skipped
# KERNELHUB_AUDIT_SAMPLES=1: every audited call's raw figures go into checks.clock_audit.samples (for finding out
# why the audit reads what it reads on a host; a few hundred entries).
AUDIT_MIN = 24
# The rules of run_timing's two statistical comparisons (the clock audit, the fresh-input comparison). Where one of
# them would reject, the loop first runs on until it holds twice the calls, audits and fresh calls it had, on a
# budget of its own, and judges all of them together: a disturbance of the host or the device that slowed every
# audited request of a short timing (an honest 10 us relu * scale read 161 us slower than its null calls on an H100 on
# 2026-12-07, in a timing of three audited requests) is diluted by the second half, while a forged clock or a
# kernel that skips work is as far off in every call and only gives the comparison more evidence. The figures
# reported are those of all the calls.
SECOND_LOOK_RULES = ("timing_forged", "memoization")
RECORD_FIRST, RECORD_ONE_IN = 8, 8
RECORD_ONE_IN_SHORT = 4  # where outputs are huge and batches short (run_timing)
# Calls per request (a run) on a GPU: back to back in the child's loop, as a plain event timing runs them. One call
# per request, with the parent's work, a null call and a stopped-and-continued process between calls, left the
# solution's forward host time at 75-112 us on the H200 host against 20 us in a plain loop, and a kernel shorter
# than that was timed by it (benchmarks/forward_host_cost.py: 56 us one call per request, 16 us in one request).
# Calls of LONG_CALL_US or more (the first batch's median) go one per request: there the harness's host time is a
# small share, and runs would multiply the calls the audit needs. KERNELHUB_RUN_CALLS overrides (tests).
RUN_CALLS = {"cuda": 8, "cpu": 1}
LONG_CALL_US = 2000.0


def run_length(device: str, median_us: float | None = None, override: int | None = None) -> int:
    """How many timed calls go in one request, given the median call so far (None: none yet); override:
    KERNELHUB_RUN_CALLS (config.RunnerConfig.run_calls), at most 100."""
    if override is not None:
        return max(1, min(100, override))
    if median_us is not None and median_us >= LONG_CALL_US:
        return 1
    return RUN_CALLS.get(device, 1)


# The tail (child._timed_call): how long the device-wide synchronise takes once the end event has passed. An
# honest call's tail is the synchronise's own cost on an idle device; the allowance is a high quantile of it,
# measured in the same process with a forward that launches nothing, plus a margin for the jitter of one
# reading. The solution's own figure is capped at TAIL_CAP_FACTOR x the trusted reference's + TAIL_CAP_US.
TAIL_QUANTILE = 0.9
TAIL_MARGIN_US = 2.0
TAIL_CALIBRATION_CALLS = 100
TAIL_CAP_FACTOR, TAIL_CAP_US = 2.0, 10.0


def tail_allowance(tails_us: list[float]) -> float:
    """What an honest call's tail may be on this device: TAIL_QUANTILE of the trusted reference's empty calls'
    tails, plus TAIL_MARGIN_US."""
    ordered = sorted(tails_us)
    if not ordered:
        return TAIL_MARGIN_US
    return ordered[min(len(ordered) - 1, int(TAIL_QUANTILE * len(ordered)))] + TAIL_MARGIN_US


def with_tail(window_us: float, tail_us: float | None, allowance_us: float | None) -> float:
    """A call's time: its window, plus whatever of its tail exceeds the allowance (work left running past forward
    on another stream, finished only by the device-wide synchronise)."""
    if tail_us is None or allowance_us is None:
        return window_us
    return window_us + max(0.0, tail_us - allowance_us)


def median_lower_bound(values: list[float]) -> float:
    """A distribution-free lower 95% confidence bound for the median of values (binomial order statistic)."""
    ordered = sorted(values)
    n = len(ordered)
    lo = int(math.floor(n / 2 - 0.98 * math.sqrt(n))) - 1
    return ordered[max(0, lo)]


class AuditEntry(NamedTuple):
    """One audited call (or run of calls, per call): what the child reported and what the parent saw."""

    reported_us: float
    wall_us: float  # the request, by the parent's clock
    null_wall_us: float  # the trusted null call of the same harness work
    cpu_us: float | None  # the request's busiest thread's CPU time (None: the threads changed; 0: no statistics)
    null_cpu_us: float | None
    faults: int | None = None  # page faults during the request, and during the null call
    null_faults: int | None = None
    calls: int = 1  # the calls of the request (a run's): the figures above are per call


def _fresh_positions(rng: random.Random, batch: int, run_calls: int, half: bool = False) -> set[int]:
    """Which calls of a batch regenerate their set (FRESH_ONE_IN of them; half of them where `half`): at random
    positions, or, where calls go in runs, a block at a random place, so that the other runs hold none (they are
    the audited ones)."""
    count = max(-(-batch // FRESH_ONE_IN), batch // 2 if half else 0)
    if run_calls <= 1:
        return set(rng.sample(range(batch), k=count))
    start = rng.randrange(batch - count + 1)
    return set(range(start, start + count))


def _runs(batch: int, run_calls: int, fresh: set[int]) -> list[list[int]]:
    """The batch's positions in runs of at most run_calls, each all on regenerated sets or all on reused ones."""
    runs: list[list[int]] = []
    for pos in range(batch):
        if runs and len(runs[-1]) < run_calls and (pos in fresh) == (runs[-1][-1] in fresh):
            runs[-1].append(pos)
        else:
            runs.append([pos])
    return runs


def clock_audit(reported_median_us: float, audits: list[AuditEntry] | list[tuple[Any, ...]],
                device: str) -> dict[str, Any]:
    """audits: AuditEntry per audited call (or plain tuples of its fields); see CLOCK_RATIO. The page faults are
    reported, not judged: the harness's work should fault the same in both processes (heap.py), and where it does
    not, the figures show why the audit's bound is off. On a CPU the solution's own time is measured by the
    kernel's scheduler statistics: the longest one thread ran or waited on a run queue (sandbox.busiest_thread_us).
    That cannot exceed the wall time that passed, and unlike the wall clock it does not grow while the process
    sleeps between requests or is stopped. The wait matters on a loaded host: with CPU time alone a clock forged
    to run at half speed was credited whenever the solution's thread waited for a CPU a third of its call or
    more (its wall time then 1.4x its CPU time: a CI run of 2026-12-01 on 2 cores, 0.66x the real time reported
    against a floor of 0.64x). Where the kernel keeps no such statistics (every reading 0), the wall clock is
    used."""
    entries = [AuditEntry(*a) for a in audits]
    by_cpu = device == "cpu" and any(e.cpu_us for e in entries)
    # A CPU entry whose thread readings could not say (None: threads came or went) falls back to the wall clock.
    usable = [(e.cpu_us, e.null_cpu_us) if by_cpu and e.cpu_us is not None and e.null_cpu_us is not None
              else (e.wall_us, e.null_wall_us) for e in entries]
    own = [c - n for c, n in usable]
    bound = median_lower_bound(own)
    null_median = statistics.median(n for _, n in usable)
    # The slack is a request's (what the solution's process-wide guards add to each request, and its noise): a run
    # of n calls in one request spreads it over them. Taken whole per call, it let a paced clock on a 2.4 ms CPU
    # kernel in runs of 8 report its calls at 0.58x their real time (the floor at 0.53x).
    per_request = statistics.median(max(1, int(e.calls)) for e in entries)
    floor = (CLOCK_RATIO[device] * bound - CLOCK_SLACK_US[device] / per_request
             - HARNESS_SHARE * max(0.0, null_median))

    def faults_median(values: list[int | None]) -> float | None:
        seen = [v for v in values if v is not None]
        return statistics.median(seen) if seen else None

    return {"calls": len(own), "calls_per_request": per_request,
            "clock": "thread CPU and run-queue time" if by_cpu else "wall", "reported_median_us":
            reported_median_us, "parent_clock_median_us": statistics.median(own),
            "parent_clock_lower_bound_us": bound,
            "null_call_median_us": null_median, "floor_us": floor,
            "page_faults_median": {"solution": faults_median([e.faults for e in entries]),
                                   "null_call": faults_median([e.null_faults for e in entries])},
            "ok": reported_median_us >= floor}


@dataclass(frozen=True)
class TimingResult:
    """What run_timing measured in one child. Every figure the evaluator decides on is from the parent's clock or
    checked against it; the fields named *_reported are the child's own word, kept for diagnosis."""

    times_us: list[float]  # the calls the statistics are over (op-recorded ones left out; a run's calls at its mean)
    stats: dict[str, Any]  # summarize(times_us)
    calls: int  # every timed call, the op-recorded ones included
    checked_calls: int  # timed calls whose outputs were checked against the reference
    memo: dict[str, Any] | None  # first calls on a set against repeats (_memo)
    fresh: dict[str, Any] | None  # calls on regenerated sets against reused ones (_fresh_check)
    wall_per_call_us: float  # back-to-back calls by the parent's clock, the empty loop's taken off
    clock_audit: dict[str, Any] | None  # the audit's record (_audit), None where there was no null call
    tail: dict[str, Any] | None  # the device-wide synchronise after each call (_tail_summary), CUDA only
    child_phases_us_reported: dict[str, float] | None  # where the child says its harness time went
    back_to_back_forward_host_us_reported: float | None  # its host time in forward on the back-to-back calls
    # Its median host time in forward in the warm-up's tight loop, which the head start is measured against
    # (child.Harness._measure_tight); None where the head start is off or on a CPU.
    tight_forward_host_us_reported: float | None = None
    # Where a statistical comparison would have rejected the first calls (SECOND_LOOK_RULES): its rule and message
    # then, and the counts the loop ran on from; None where it never would.
    second_look: dict[str, Any] | None = None


def run_timing(session: Any, *, device: str, n_sets: int, check_batch: Any = None,
               perturbable: list[list[int]] | None = None, output_bytes: int = 0,
               null_call: Any = None, cpu_clock: Any = None,
               tail_allowance_us: float | None = None, window_offset_us: float = 0.0,
               settings: config.RunnerConfig | None = None) -> TimingResult:
    """Adaptive timing in `session` (a child already loaded and with n_sets input sets prepared), within the
    budget, the most calls and the run length of `settings` (config.py; the environment's where none is given).

    For the solution, check_batch(positions, order, perturb) checks a sample of each batch (it raises to stop
    with a verdict), and with `perturbable` ([input index, numel] pairs) every timed call first copies one
    random element of an input over another: no two timed calls see the same inputs, so a result memoised
    by pointer, shape or content is stale, and the checked calls catch it. One call in FRESH_ONE_IN instead
    regenerates its set from a fresh seed (a change ["fresh", seed]), which defeats recomputing only what
    changed; for the solution, calls on reused sets much faster than fresh ones are rejected (`memoization`).
    With null_call(sets, changes, keep, head starts) -> (seconds, busiest thread's CPU us, page faults, the trusted
    child's phases; None where unknown) (the trusted process's null call, each call with the head start the
    solution's call reported (_head_starts), timed by the parent with the solution stopped) and cpu_clock() ->
    sandbox.thread_cpu_ns of the solution, the reported times are audited against the parent's clock
    (clock_audit; TimingRejected "timing_forged"). On CUDA each call's time is its event window plus its tail
    beyond tail_allowance_us (with_tail), less window_offset_us (the drain's cost where KERNELHUB_WINDOW_DRAIN is
    on, measured by the trusted reference: solution_timing.TailCalibration). Calls the guard's op record ran on (the solution's) are checked like
    all others but left out of the statistics: the record costs time inside the call that no baseline pays.
    """
    settings = settings or config.RunnerConfig.from_env()
    budget_s = settings.timing_budget(device)
    loop = _Loop(session, device=device, check_batch=check_batch, null_call=null_call, cpu_clock=cpu_clock,
                 tail_allowance_us=tail_allowance_us, samples=settings.audit_samples,
                 head_start_max_us=settings.head_start_max_us, window_offset_us=window_offset_us)
    rng = loop.rng
    warm = session.request("warmup", calls=max(3, min(n_sets, 10)), max_s=5.0, tight=True)
    tight = warm.get("tight_host_us") if isinstance(warm, dict) else None
    tight_us = float(tight) if isinstance(tight, int | float) and not isinstance(tight, bool) else None
    if tight_us is not None and not math.isfinite(tight_us):
        tight_us = None
    # The first null call of the trusted process pays what one-time costs are left (the largest, importing
    # torch._dynamo, is paid earlier: child.op_warm_audit). Made, reported and dropped here: on the H200 it had
    # been one of an audit's few samples, a null call 4.6-5.8 s long, and the audit's lower bound fell to minus
    # seconds.
    first_null_s = null_call([0], [None], False, None)[0] if null_call is not None else None
    budget_end = time.monotonic() + budget_s
    longest, most_checks = batch_limits(device, output_bytes if check_batch is not None else 0)
    batch = min(10, longest)
    # Outputs so large that a batch keeps fewer than 2 x FRESH_MIN_CALLS of them (gigabytes each: every batch
    # ends in a check that moves a whole output, seconds each): the loop's exit rule is met in calls, not batches.
    # Half of each batch regenerates its set, so the fresh-input comparison has its calls of both kinds in a few
    # batches, and the op record's warm-up is the first batch rather than RECORD_FIRST calls (with batches of 2
    # it had been four batches whose calls the statistics leave out); after it the record samples one run in
    # RECORD_ONE_IN_SHORT rather than RECORD_ONE_IN, so that the few runs still see it. Where batches are long,
    # nothing changes.
    short = longest < 2 * FRESH_MIN_CALLS
    if short:
        loop.record_first = min(RECORD_FIRST, batch)
        loop.record_one_in = RECORD_ONE_IN_SHORT
    run_calls = run_length(device, override=settings.run_calls)
    max_reps = settings.max_reps
    second_look: dict[str, Any] | None = None
    judged: tuple[dict[str, Any] | None, dict[str, Any] | None] | None = None

    def doubled() -> bool:
        """Whether the loop holds twice what the first look judged (always true before a second look)."""
        return second_look is None or (
            len(loop.audits) >= 2 * second_look["audited_calls"]
            and len(loop.fresh_times) >= 2 * second_look["fresh_calls"]
            and len(loop.reused_times) >= 2 * second_look["reused_calls"])

    while True:
        batch_start = time.monotonic()
        if loop.awake:
            session.request("ping", stay_awake_s=loop.awake)
        order = [rng.randrange(n_sets) for _ in range(batch)]
        fresh_positions = _fresh_positions(rng, batch, run_calls, half=short)
        perturb = _changes(rng, batch, fresh_positions, perturbable)
        batch_times: list[float] = []
        own_times: list[float] = []
        recorded: list[bool] = []
        for positions in _runs(batch, run_calls, fresh_positions):
            fresh_run = positions[0] in fresh_positions
            run_times, record = loop.time_run(positions, order, perturb, fresh=fresh_run)
            batch_times += run_times
            own_times += loop.run_calls_own
            recorded += [record and loop.checked_side] * len(positions)
            loop.fresh_runs += int(fresh_run and not (record and loop.checked_side))
        if check_batch is not None:
            # Picked after the batch ran, so the solution cannot know which calls are checked.
            positions = sorted(rng.sample(range(len(order)), k=max(1, min(most_checks, len(order) // 3))))
            check_batch(positions, order, perturb)
            loop.checked += len(positions)
        loop.account(order, perturb, batch_times, recorded, own_times)
        stats = summarize(loop.times)
        # The clock audit wants AUDIT_MIN calls for a useful bound: the loop goes on for them, up to twice its budget.
        audited = null_call is None or len(loop.audits) >= AUDIT_MIN or time.monotonic() > budget_end + budget_s
        settled = (len(loop.times) >= MIN_REPS and stats.get("rse") is not None and stats["rse"] < TARGET_RSE
                   and audited and doubled())
        # The budget does not end the loop before the fresh-input comparison has its calls (two batches).
        compared = len(loop.fresh_times) >= FRESH_MIN_CALLS and len(loop.reused_times) >= FRESH_MIN_CALLS
        if settled or loop.calls >= max_reps or (time.monotonic() > budget_end and compared and audited
                                                 and loop.times):
            try:
                judged = _judge(loop, device, check_batch is not None, second_look)
                break
            except _SecondLook as look:
                # As many calls again, on a budget of their own, before the rule decides (SECOND_LOOK_RULES).
                second_look = look.record
                budget_end = time.monotonic() + budget_s
                max_reps = 2 * settings.max_reps
        # The next batch doubles, but is not planned to run past the budget by the cost per call of this one
        # (its null calls and checks included): a whole batch past the budget had been seconds of overhead.
        # (Once the fresh-input comparison has its calls: the first two batches hold them.)
        per_call_s = (time.monotonic() - batch_start) / len(batch_times)
        run_calls = run_length(device, stats.get("median_us"), settings.run_calls)
        fits = math.ceil(max(0.0, budget_end - time.monotonic()) / max(per_call_s, 1e-6))
        batch = max(MIN_BATCH, min(longest, batch * 2, fits)) if compared else min(longest, batch * 2)
    assert judged is not None  # the loop ends only where _judge returned
    audit, fresh = judged
    times = _judged_times(loop)
    if audit is not None and first_null_s is not None:
        audit["first_null_call_dropped_us"] = round(first_null_s * 1e6, 1)
    wall_per_call_us, b2b_host_us = _wall_per_call_us(session, rng, n_sets, len(times))
    return TimingResult(times_us=times, stats=summarize(times), calls=loop.calls, checked_calls=loop.checked,
                        memo=_memo(loop.first_seen, loop.repeats), fresh=fresh, wall_per_call_us=wall_per_call_us,
                        clock_audit=audit, tail=_tail_summary(loop, tail_allowance_us),
                        child_phases_us_reported=_child_phases(loop.phases),
                        back_to_back_forward_host_us_reported=b2b_host_us,
                        tight_forward_host_us_reported=tight_us, second_look=second_look)


class _SecondLook(Exception):
    """A statistical comparison would reject the calls so far, for the first time: run_timing runs on."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__(record["rule"])
        self.record = record


def _judged_times(loop: _Loop) -> list[float]:
    # Every call op-recorded (a run capped at fewer calls than RECORD_FIRST): their times, with the record's cost
    # in them, are all there is.
    return loop.times or loop.all_times


def _judge(loop: _Loop, device: str, judged: bool,
           second_look: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The clock audit and the fresh-input comparison over every call so far: (audit, fresh). A rejection by
    either (SECOND_LOOK_RULES) is a _SecondLook the first time, a TimingRejected after it."""
    try:
        return (_audit(_judged_times(loop), loop.audits, loop.samples, device),
                _fresh_check(loop.fresh_times, loop.reused_times, judged=judged, runs=loop.fresh_runs))
    except TimingRejected as e:
        if e.rule not in SECOND_LOOK_RULES:
            raise
        if second_look is None:
            raise _SecondLook({"rule": e.rule, "message": e.message[:500], "calls": loop.calls,
                               "audited_calls": len(loop.audits), "fresh_calls": len(loop.fresh_times),
                               "reused_calls": len(loop.reused_times)}) from None
        raise TimingRejected(e.rule, f"{e.message} (read twice: over the first {second_look['calls']} calls, then "
                                     f"over all {loop.calls})", e.audit) from None


def _changes(rng: random.Random, batch: int, fresh_positions: set[int],
             perturbable: list[list[int]] | None) -> list[Any]:
    """Each call's change to its input set: ["fresh", seed] (regenerate it), [input, from, to] (copy one element
    over another), or None."""
    perturb: list[Any] = []
    for pos in range(batch):
        if pos in fresh_positions:
            perturb.append(["fresh", rng.randrange(1 << 31)])
        elif perturbable:
            j, numel = perturbable[rng.randrange(len(perturbable))]
            perturb.append([j, rng.randrange(numel), rng.randrange(numel)])
        else:
            perturb.append(None)
    return perturb


class _Loop:
    """The timing loop's accounts: every call's time, those the statistics take, the audit's entries, the
    comparisons' samples (fresh against reused sets, first calls on a set against repeats)."""

    def __init__(self, session: Any, *, device: str, check_batch: Any, null_call: Any, cpu_clock: Any,
                 tail_allowance_us: float | None, samples: bool = False, head_start_max_us: float = 0.0,
                 window_offset_us: float = 0.0) -> None:
        self.session, self.device, self.null_call, self.cpu_clock = session, device, null_call, cpu_clock
        # The solution's timing: outputs kept for the checks, and the guard's op record in play.
        self.checked_side = check_batch is not None
        self.tail_allowance_us = tail_allowance_us
        self.window_offset_us = window_offset_us  # the drain's cost, off every window
        self.drain_timeouts = 0  # batches in which a drain gave up waiting (the child's word)
        self.record_first = RECORD_FIRST  # the calls the op record runs on first (fewer where batches are short)
        self.record_one_in = RECORD_ONE_IN  # then one run in this many (more often where batches are short)
        self.rng = random.SystemRandom()
        self.awake = AWAKE_S.get(device, 0.0)
        self.times: list[float] = []  # the calls the statistics are taken over
        self.all_times: list[float] = []  # every timed call, the op-recorded ones included
        self.calls = 0
        self.checked = 0
        self.tails: list[float] = []
        self.escaped: list[float] = []  # per call, the time added for a tail beyond the allowance
        self.first_seen: dict[int, float] = {}
        self.repeats: list[float] = []
        # The fresh-input comparison's samples: each call's own figure (its window and tail as the child reported
        # them), not its run's mean; and how many runs the fresh ones came from.
        self.fresh_times: list[float] = []
        self.reused_times: list[float] = []
        self.fresh_runs = 0
        self.run_calls_own: list[float] = []  # the latest run's calls, each its own figure
        self.audits: list[AuditEntry] = []  # clock_audit's entries
        self.samples: list[dict[str, Any]] | None = [] if samples else None  # KERNELHUB_AUDIT_SAMPLES
        self.head_start_max_us = head_start_max_us
        self.phases: Any = None
        self.run_phases: dict[str, float] | None = None  # the child's word on the latest run (its phases' growth)

    def time_run(self, positions: list[int], order: list[int], perturb: list[Any],
                 fresh: bool) -> tuple[list[float], bool]:
        """A run: RUN_CALLS calls back to back in one request (the child's loop, as a plain event timing's), timed
        as a whole by the parent's clock. Whether the guard's op record runs is chosen per run, here: the first
        runs (RECORD_FIRST calls) and then one in RECORD_ONE_IN. Recorded runs cost the harness more and are left
        out of the audit. Returns the calls' times and whether the run was recorded."""
        first = positions[0]
        record = self.calls + first < self.record_first or self.rng.randrange(self.record_one_in) == 0
        cpu0 = self.cpu_clock() if self.cpu_clock is not None else None
        t0 = time.perf_counter()
        reply = self.session.request("time_batch", order=[order[p] for p in positions], keep=self.checked_side,
                                     perturb=[perturb[p] for p in positions], append=first > 0, record=record,
                                     stay_awake_s=self.awake)
        wall_us = (time.perf_counter() - t0) * 1e6
        cpu1 = self.cpu_clock() if cpu0 is not None else None
        # None where the threads changed during the run: that audit entry then uses the wall clock.
        cpu_us = busiest_thread_us(cpu0, cpu1) if cpu0 is not None and cpu1 is not None else 0.0
        faults = faults_between(cpu0, cpu1) if cpu0 is not None and cpu1 is not None else None
        before, self.phases = self.phases, reply.get("phases_us")
        # (None on the first request: the child's totals then hold its warm-up and calibrations too.)
        self.run_phases = _phase_delta(before, self.phases) if before is not None else None
        windows = validate_times(reply.get("times_us"), len(positions))
        if self.window_offset_us:
            windows = [max(0.0, w - self.window_offset_us) for w in windows]
        if reply.get("drain_timeouts"):
            self.drain_timeouts += 1
        heads = _head_starts(reply.get("head_start_cycles"), len(positions), self.head_start_max_us)
        run_tails: list[float | None] = [None] * len(positions)
        if self.device == "cuda" and self.tail_allowance_us is not None:
            run_tails = list(validate_times(reply.get("tails_us"), len(positions)))
            self.tails += [t for t in run_tails if t is not None]
        run_times = [with_tail(w, t, self.tail_allowance_us) for w, t in zip(windows, run_tails, strict=True)]
        self.escaped += [t - w for t, w in zip(run_times, windows, strict=True)]
        if sum(run_times) > wall_us * 1.05 + 1000:
            raise TimingRejected(
                "timing_inconsistent",
                f"{len(run_times)} call(s) were reported to take {sum(run_times):.0f} us together but their "
                f"request took {wall_us:.0f} us by the evaluator's clock")
        # Calls on regenerated sets are not audited: regenerating a set is most of such a request, and a null
        # call that regenerated the trusted reference's copy would move it ahead of the changes the checks
        # replay on it (_runs keeps them out of the other calls' runs).
        if self.null_call is not None and not record and not fresh and self.rng.randrange(AUDIT_ONE_IN) == 0:
            self._audit_run(positions, order, perturb, run_times, wall_us, cpu_us, faults, heads)
        self.run_calls_own = list(run_times)
        if len(run_times) > 1:
            # Of a run the parent's clock sees only the total: the child could move time between its calls (a paced
            # clock: four calls at half, one at three times) and keep the total, halving the median, which the audit
            # could not see. So every call of a run counts as the run's mean: the figures are built from totals the
            # parent checks. (A forged paced clock in runs of 8 had been accepted at 0.58-0.61x its real time.)
            run_times = [sum(run_times) / len(run_times)] * len(run_times)
        return run_times, record

    def _audit_run(self, positions: list[int], order: list[int], perturb: list[Any], run_times: list[float],
                   wall_us: float, cpu_us: float | None, faults: int | None, heads: list[int] | None) -> None:
        n = len(positions)
        null_s, null_cpu_us, null_faults, null_phases = self.null_call(
            [order[p] for p in positions], [perturb[p] for p in positions], self.checked_side, heads)
        # Per call: the run's figures over its calls.
        self.audits.append(AuditEntry(sum(run_times) / n, wall_us / n, null_s * 1e6 / n,
                                      None if cpu_us is None else cpu_us / n,
                                      None if null_cpu_us is None else null_cpu_us / n, faults, null_faults, n))
        if self.samples is not None:
            self.samples.append({"call": self.calls + positions[0], "calls_in_run": n, "reported_us": sum(run_times),
                                 "request_wall_us": wall_us, "null_wall_us": null_s * 1e6,
                                 "request_cpu_us": cpu_us, "null_cpu_us": null_cpu_us, "request_faults": faults,
                                 "null_faults": null_faults, "null_phases_us": null_phases,
                                 "request_phases_us_reported": self.run_phases})

    def account(self, order: list[int], perturb: list[Any], batch_times: list[float], recorded: list[bool],
                own_times: list[float] | None = None) -> None:
        """A batch's calls into the statistics (the op-recorded ones left out) and the comparisons' samples.
        own_times: each call's own figure where batch_times holds its run's mean (the fresh-input comparison's)."""
        self.calls += len(batch_times)
        self.all_times += batch_times
        own = own_times if own_times is not None else batch_times
        for change, k, t, t_own, rec in zip(perturb, order, batch_times, own, recorded, strict=True):
            if rec:
                continue
            (self.fresh_times if change and change[0] == "fresh" else self.reused_times).append(t_own)
            if k in self.first_seen:
                self.repeats.append(t)
            else:
                self.first_seen[k] = t
            self.times.append(t)


def _audit(times: list[float], audits: list[AuditEntry], samples: list[dict[str, Any]] | None,
           device: str) -> dict[str, Any] | None:
    """The clock audit's record, or TimingRejected("timing_forged") where the reported times are below its floor."""
    if not audits:
        return None
    audit = clock_audit(summarize(times)["median_us"], audits, device)
    if samples is not None:
        audit["samples"] = samples
    if not audit["ok"]:
        raise TimingRejected(
            "timing_forged",
            f"the timed calls were reported at {audit['reported_median_us']:.1f} us (median) but took at least "
            f"{audit['parent_clock_lower_bound_us']:.1f} us each (95% bound; median "
            f"{audit['parent_clock_median_us']:.1f} us) by the evaluator's clock beyond the harness's own work "
            f"({audit['null_call_median_us']:.1f} us per call, measured in the trusted process): the solution's "
            "timer was tampered with. Leave the timers and the runtime's functions alone", audit)
    return audit


def _wall_per_call_us(session: Any, rng: random.Random, n_sets: int, n_times: int) -> tuple[float, float | None]:
    """The parent's own clock on back-to-back calls: work that escapes the timed window shows up here.
    (wall us per call, the child's word on its host time in forward per call, or None)."""
    order = [rng.randrange(n_sets) for _ in range(max(5, min(50, n_times // 4)))]
    t0 = time.perf_counter()
    session.request("back_to_back", order=order, empty=True)
    overhead = time.perf_counter() - t0
    t0 = time.perf_counter()
    reply = session.request("back_to_back", order=order)
    wall = max(0.0, time.perf_counter() - t0 - overhead) / len(order) * 1e6
    host = reply.get("forward_host_us") if isinstance(reply, dict) else None
    if not isinstance(host, int | float) or isinstance(host, bool) or not math.isfinite(host):
        return wall, None
    return wall, round(float(host), 1)


def _memo(first_seen: dict[int, float], repeats: list[float]) -> dict[str, Any] | None:
    """First calls on each set against repeat calls on the same sets (suspicious: repeats much faster)."""
    if not (first_seen and repeats):
        return None
    first_med = statistics.median(first_seen.values())
    rep_med = statistics.median(repeats)
    return {"first_call_median_us": first_med, "repeat_median_us": rep_med,
            "suspicious": len(first_seen) >= 3 and rep_med < MEMO_RATIO * first_med}


def _fresh_check(fresh_times: list[float], reused_times: list[float], *, judged: bool,
                 runs: int | None = None) -> dict[str, Any] | None:
    """Calls on regenerated sets against calls on reused ones; for the solution (judged), TimingRejected
    ("memoization") where the reused ones are much faster. Each call counts by its own figure, also where calls
    go in runs: the statistics give a run's calls its mean (so that a child cannot move time between them), and
    then one slow call (a hiccup of the host or the device) moves every fresh call of its run at once, where a
    short timing has only one or two such runs. This comparison is about work a kernel skips, which shows in
    every call it skips it on, not about the clock (the audit's). runs: how many runs the fresh calls came from."""
    if len(fresh_times) < FRESH_MIN_CALLS or len(reused_times) < FRESH_MIN_CALLS:
        return None
    fresh_med, reused_med = statistics.median(fresh_times), statistics.median(reused_times)
    # Against a lower 95% bound of the fresh calls' median (few calls; on a loaded host a few of them slowed
    # by chance had rejected honest kernels): noise only adds time, and a real memoiser is faster than
    # even the fastest fresh calls.
    fresh_bound = median_lower_bound(fresh_times)
    fresh = {"fresh_calls": len(fresh_times), "fresh_median_us": fresh_med, "reused_median_us": reused_med,
             "fresh_lower_bound_us": fresh_bound, "ok": reused_med >= FRESH_RATIO * fresh_bound,
             "fresh_min_us": min(fresh_times), "reused_calls": len(reused_times)}
    if runs is not None:
        fresh["fresh_runs"] = runs
    if not fresh["ok"] and judged:
        raise TimingRejected(
            "memoization",
            f"calls on inputs that differ from an earlier call in one element took {reused_med:.1f} us (median), "
            f"calls on freshly generated inputs {fresh_med:.1f} us: the kernel reuses work from earlier calls. "
            "Compute every output from its inputs on every call",
        )
    return fresh


# No GPU's clock reaches this many cycles a microsecond (3 GHz): the parent's own bound of a reported spin.
MAX_SPIN_CYCLES_PER_US = 3000


def _head_starts(value: Any, n: int, cap_us: float) -> list[int] | None:
    """The head start of each call of a run on a GPU (cap_us: child.HEAD_START_MAX_US), in GPU cycles, as the child
    reported it: the audit's null call spins as many, so that the GPU's idle time is the harness's on both sides
    (cycles, not microseconds: two processes' readings of the spin's rate differed by the GPU's clock when each
    was taken). Its word, so bounded here by the cap at the fastest clock any GPU has, and by the trusted
    process at its own rate (child.op_null_call); None where it reported none that is usable (the null call then
    sets its own)."""
    if not isinstance(value, list) or len(value) != n:
        return None
    if not all(type(v) is int for v in value):
        return None
    most = int(cap_us * MAX_SPIN_CYCLES_PER_US)
    return [min(most, max(0, v)) for v in value]


def _phase_delta(before: Any, after: Any) -> dict[str, float] | None:
    """What one request added to the child's cumulative phases (its word: where its side of a run's time went,
    beside the null call's in the audit's samples)."""
    now = _child_phases(after)
    if now is None:
        return None
    then = _child_phases(before) or {}
    return {k: round(v - then.get(k, 0.0), 1) for k, v in now.items()}


def _child_phases(phases: Any) -> dict[str, float] | None:
    """The child's word on where its harness time went, kept only as finite numbers of the known phases."""
    if not isinstance(phases, dict):
        return None
    return {k: round(float(v), 1) for k, v in phases.items()
            if k in ("inputs", "poison", "call", "fingerprint", "forward_host", "head_start") and type(v) in (int, float)
            and math.isfinite(v)}


def _tail_summary(loop: _Loop, allowance_us: float | None) -> dict[str, Any] | None:
    tails, escaped = loop.tails, loop.escaped
    if not tails:
        return None
    summary = {"allowance_us": round(float(allowance_us or 0.0), 2), "median_us": round(statistics.median(tails), 2),
               "calls_over_allowance": sum(1 for e in escaped if e > 0),
               "added_median_us": round(statistics.median(escaped), 2), "calls": len(tails)}
    if loop.window_offset_us:
        summary["drain_us_subtracted"] = round(loop.window_offset_us, 2)
        summary["drain_timeout_batches_reported"] = loop.drain_timeouts
    return summary
