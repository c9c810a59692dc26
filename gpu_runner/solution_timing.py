"""The solution's timed phase: its timed calls (`time_solution`, through timing.run_timing, a sample of every batch
checked against the reference, the clock audited), then what can still reject it (the guards' findings:
`integrity`; the speed of light: `speed_of_light`; memoisation and work outside the timer), and the second metric,
the profiler's kernel time (`kernel_time`). `TailCalibration` is the device-wide synchronise's allowance, which
the baselines' timing uses too.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from typing import Any

from gpu_runner import config, limits, sandbox, timing
from gpu_runner.checks import compare, read, structure_problems
from gpu_runner.context import Context
from gpu_runner.reference import Reference
from gpu_runner.session import EvaluatorError, Session, Verdict, trusted, untrusted

# The second metric (CUDA Agent's, kernel_time): warm-up calls, then profiled calls.
KERNEL_TIME_WARMUP, KERNEL_TIME_CALLS = 5, 10

# The busy-time cross-check (rule timing_forged): the solution's event median may not fall below this fraction of
# what an honest window holds: the device's busy time per profiled call in the same process, plus the harness's
# fixed cost of a window (the trusted reference's median window around one kernel of about a microsecond, measured
# with the drain's calibration: 4.1-4.35 us on an H100). The window holds a call's device work and more (launch,
# the cache flushed before it, which the profiled calls skip), so honest solutions read about 0.85 and up: 0.83-0.93
# for the fidelity cases of 4.5 us to 0.19 ms and 1.0-1.15 for a ReLU of 9 us, on an H100 (2026-12-07); 0.89-1.05
# of the busy time alone for solutions of 0.4-20 ms the same day. A CUDA event forged to answer half read 0.44 of
# the busy time on the 0.19 ms kernel (2026-12-06), where the clock audit could not bind; on the 9 us kernel it
# read 0.84-0.88 of the busy time alone (credited, until 1.7.3 counted the window's fixed cost), and 0.45-0.47 of
# the busy time plus that cost. The rule's first run on a GPU (H100, 2026-12-07 15:57-16:13): the forgery on the 9 us
# kernel read 0.51 (rejected); honest solutions 0.70-1.15, the lowest the 1 x 128 add's (its event median moved
# between 3.8 and 5.1 us from run to run): on a kernel of a microsecond the floor's margin is about 15% either way.
BUSY_RATIO_FLOOR = 0.6


def busy_cross_check(runtime_us: float, busy_us: float, window_us: float = 0.0) -> str | None:
    """Why the reported event median cannot be the solution's own time, or None: a median below BUSY_RATIO_FLOOR x
    what an honest window holds, the device's busy time per profiled call plus the window's fixed cost (window_us:
    TailCalibration.one_kernel_window_us, 0 where it was not measured). Without that cost a forged median of a
    kernel of a few microseconds stayed above the floor (the harness's fixed work in the window lifts it)."""
    honest_us = busy_us + max(0.0, window_us)
    if busy_us <= 0 or runtime_us >= BUSY_RATIO_FLOOR * honest_us:
        return None
    cost = (f" plus {window_us:.1f} us that any window holds (the trusted reference's window around a 1 us kernel)"
            if window_us > 0 else "")
    return (f"rule timing_forged broken: the timed calls were reported at {runtime_us:.1f} us (median), but the "
            f"device was busy {busy_us:.1f} us per call with the same solution in the same process (the profiler's "
            f"account of its calls){cost}: {runtime_us / honest_us:.2f} of it, where honest solutions read about "
            f"0.7 or more (the floor is {BUSY_RATIO_FLOOR}): the solution's timer was tampered with. Leave the "
            "timers, the CUDA events and the runtime's functions alone")


class TailCalibration:
    """The allowance for the device-wide synchronise after each timed window, per process; the trusted
    reference's figure, measured once an evaluation, caps every other's."""

    def __init__(self, ctx: Context, ref: Reference) -> None:
        self.ctx, self.ref = ctx, ref
        self.trusted_us: float | None = None
        # The drain's cost (KERNELHUB_WINDOW_DRAIN), the trusted reference's figure, off every side's windows.
        self.drain_us = 0.0
        # The trusted reference's median window around one kernel of about a microsecond, without the drain (the
        # drain's calibration): the least an honest window holds beside its device work (busy_cross_check).
        self.one_kernel_window_us = 0.0

    def allowance(self, session: Session) -> float | None:
        """CUDA: what the device-wide synchronise after the timed window costs an honest call in `session`'s
        process (timing.tail_allowance over empty calls there, under the exclusive device lock). The solution's
        own figure is capped by the trusted reference's (TAIL_CAP_FACTOR x it + TAIL_CAP_US): its process could
        inflate its empty calls to hide work past forward, and gains at most that cap."""
        if self.ctx.device != "cuda" or self.ref.session is None:
            return None
        calls = timing.TAIL_CALIBRATION_CALLS
        if self.trusted_us is None:
            reply = trusted(self.ref.session, "tail_calibrate", calls=calls)
            self.trusted_us = timing.tail_allowance(timing.validate_times(reply.get("tails_us"), calls))
            self.drain_us = self._drain_cost(reply.get("drain"), calls)
        if session is self.ref.session:
            tails = None
            allowance = self.trusted_us
        else:
            if session.role == "solution":
                reply = untrusted(session, "tail_calibrate", "timing (calibration)", calls=calls)
            else:
                reply = trusted(session, "tail_calibrate", calls=calls)
            tails = timing.validate_times(reply.get("tails_us"), calls)
            cap = timing.TAIL_CAP_FACTOR * self.trusted_us + timing.TAIL_CAP_US
            allowance = min(timing.tail_allowance(tails), cap)
        self.ctx.result.checks.setdefault("tail_calibration", {})[session.role] = {
            "calls": calls, "allowance_us": round(allowance, 2),
            "reference_allowance_us": round(self.trusted_us, 2),
            "median_us": round(statistics.median(tails), 2) if tails else None}
        return allowance

    def _drain_cost(self, drain: Any, calls: int) -> float:
        """The drain's cost from the trusted reference's calibration: the median empty window with it less the
        median without it (child._drain_cost). 0.0 where the drain is off."""
        if not self.ctx.settings.window_drain:
            return 0.0
        if not isinstance(drain, dict):
            raise EvaluatorError("KERNELHUB_WINDOW_DRAIN is on but the reference measured no drain")
        with_ = timing.validate_times(drain.get("with_us"), calls)
        without = timing.validate_times(drain.get("without_us"), calls)
        cost = max(0.0, statistics.median(with_) - statistics.median(without))
        self.one_kernel_window_us = statistics.median(without)
        self.ctx.result.checks["window_drain"] = {
            "cost_us": round(cost, 2), "with_median_us": round(statistics.median(with_), 2),
            "without_median_us": round(statistics.median(without), 2),
            "with_p90_us": round(sorted(with_)[int(0.9 * (len(with_) - 1))], 2),
            "calibration_timeouts": bool(drain.get("timeouts"))}
        return cost


def time_solution(ctx: Context, ref: Reference, sol: Session, tails: TailCalibration) -> None:
    """The solution's timed calls (timing.run_timing) on the reference's input sets, a sample of each batch checked,
    the clock audited; then what the timing can still reject (memoisation, work outside the timer)."""
    # The memory plan's cap on the outputs a batch keeps, for the timing loop's batch_limits (this thread).
    cap = timing.KEEP_CALLS.set(ref.plan.keep_outputs if ref.plan is not None else None)
    try:
        _time_solution_planned(ctx, ref, sol, tails)
    finally:
        timing.KEEP_CALLS.reset(cap)


def _time_solution_planned(ctx: Context, ref: Reference, sol: Session, tails: TailCalibration) -> None:
    # The most a timing batch keeps, with the poison block and room for the call in flight (child.py
    # _reserve_heap; CPU only).
    longest, _ = timing.batch_limits(ctx.device, ref.output_bytes)
    reserve = longest * ref.output_bytes + ref.poison_bytes() + 2 * ref.output_bytes
    if ref.plan is not None and not ref.plan.reserve:
        reserve = 0  # it would not fit beside the sets and the batch's outputs (memory_plan.py)
    reply = untrusted(sol, "prepare_timing", "preparing the timing inputs", seeds=ref.set_seeds,
                      copy_sets=ref.changes_inputs, reserve_bytes=reserve)
    got = reply.get("reserved_bytes") if isinstance(reply, dict) else None
    ctx.result.checks["heap_reserved_bytes"] = got if type(got) is int else None  # the child's word
    batch_no = [0]
    # Perturbations applied to each set since the reference last caught up with it.
    pending: dict[int, list[Any]] = {k: [] for k in range(ref.n_sets)}
    rs = ref.session
    assert rs is not None

    def check_batch(positions: list[int], order: list[int], perturb: list[Any] | None) -> None:
        batch_no[0] += 1
        prefix = f"b{batch_no[0]}_"
        with ctx.timed("timing_checks_solution"):
            reply = untrusted(sol, "save_batch", "saving timed outputs", positions=positions, prefix=prefix)
        structure_problems(reply, "in a timed call")
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
                with ctx.timed("timing_checks_reference"):
                    trusted(rs, "replay", set=k, changes=pending[k], file=f"{prefix}exp_{pos}.pt")
                    pending[k] = []
                    expected = rs.tensors(f"{prefix}exp_{pos}.pt", trusted=True)
                    (rs.workdir / f"{prefix}exp_{pos}.pt").unlink(missing_ok=True)
            else:
                expected = ref.expected_sets[k]
            if str(pos) not in files:
                raise Verdict("runtime_error", f"{where}: no output was saved")
            with ctx.timed("timing_checks_solution"):
                got = read(sol, files[str(pos)], where)
            with ctx.timed("timing_checks_compare"):
                compare(ctx, expected, got, f"{where} (checked during timing; each timed call gets changed "
                                             "inputs, so a result cached from an earlier call is wrong)")
            (sol.workdir / files[str(pos)]).unlink(missing_ok=True)
            # Dropped before the next checked call's are read: held over, this call's expected and solution outputs
            # sat beside the next ones, four outputs in the parent's device memory where the plan counts two (a
            # 6 GiB output: 12 GiB more than planned).
            del expected, got

    policy = ctx.load_fields("solution")["policy"]

    def null_call(sets: list[int], changes: list[Any], keep: bool,
                  heads: list[int] | None) -> tuple[float, float | None, int | None, Any]:
        """The harness's work of one run of timed calls (timing.RUN_CALLS) in the trusted process, by the
        parent's clock (seconds), by the kernel's count of its busiest thread's CPU time (us), its page faults,
        and the trusted child's account of its phases (us)."""
        awake = timing.AWAKE_S.get(ctx.device, 0.0)
        with ctx.timed("timing_clock_audit"), sandbox.stopped(sol.child):
            if awake:
                # Woken first, as the solution's child is for its timed calls (timing.AWAKE_S).
                trusted(rs, "ping", stay_awake_s=awake)
            cpu0 = sandbox.thread_cpu_ns(rs.child)
            t0 = time.perf_counter()
            reply = trusted(rs, "null_call", sets=sets, changes=changes, keep=keep,
                            output_bytes=ref.output_bytes, poison_bytes=ref.poison_bytes(),
                            policy=policy, head_start_cycles=heads)
            wall = time.perf_counter() - t0
            cpu1 = sandbox.thread_cpu_ns(rs.child)
            return (wall, sandbox.busiest_thread_us(cpu0, cpu1), sandbox.faults_between(cpu0, cpu1),
                    reply.get("phases_us"))

    try:
        with ctx.device_lock("solution", solution_runs=True):
            allowance = tails.allowance(sol)
            t = timing.run_timing(UntrustedTiming(sol, ctx.settings), device=ctx.device, n_sets=ref.n_sets,
                                  check_batch=check_batch, perturbable=ref.perturbable,
                                  output_bytes=ref.output_bytes, null_call=null_call,
                                  cpu_clock=lambda: sandbox.thread_cpu_ns(sol.child),
                                  tail_allowance_us=allowance, window_offset_us=tails.drain_us,
                                  settings=ctx.settings)
    except timing.TimingRejected as e:
        if e.audit is not None:
            ctx.result.checks["clock_audit"] = e.audit  # the figures behind a timing_forged verdict
        guard_findings_first(ctx, sol)
        raise Verdict("rejected", f"rule {e.rule} broken: {e.message}", e.rule) from None
    stats = t.stats
    ctx.result.set_timing(stats)
    ctx.result.checks.update({"timed_calls": t.calls, "timed_window_tail": t.tail,
                              "timed_calls_checked": t.checked_calls, "memoization": t.memo,
                              "fresh_inputs": t.fresh, "wall_per_call_us": t.wall_per_call_us,
                              "back_to_back_forward_host_us_reported": t.back_to_back_forward_host_us_reported,
                              "tight_forward_host_us_reported": t.tight_forward_host_us_reported,
                              "clock_audit": t.clock_audit,
                              # Where the audit or the fresh-input comparison would have rejected the first calls
                              # (timing.SECOND_LOOK_RULES): what it said then; the verdict is on all the calls.
                              "timing_second_look": t.second_look,
                              # The child's own word, for where the time goes; not used for any decision.
                              "timing_phases_us_reported": t.child_phases_us_reported})
    median = stats["median_us"]
    # The perturbed inputs already make memoised results fail the checks; this timing heuristic (noisy on
    # a busy host) decides only where a problem turned the perturbation off.
    if t.memo and t.memo["suspicious"] and not ref.perturbable:
        guard_findings_first(ctx, sol)
        raise Verdict("rejected", "rule memoization broken: repeat calls on an input set took "
                      f"{t.memo['repeat_median_us']:.1f} us against {t.memo['first_call_median_us']:.1f} us "
                      "for the first call on each set; do not cache results across calls", "memoization")
    # On a GPU, work left running on another stream or thread shows up in the parent's clock. (On a CPU
    # nothing is asynchronous, and a busy host makes this comparison noisy: the guards watch threads.)
    if ctx.device == "cuda" and work_outside_timer(t.wall_per_call_us, median, ctx.settings.head_start_max_us):
        guard_findings_first(ctx, sol)
        raise Verdict("rejected", f"rule work_outside_timer broken: back-to-back calls took "
                      f"{t.wall_per_call_us:.0f} us each by the evaluator's clock, the timed calls "
                      f"{median:.0f} us; all work must finish inside forward", "work_outside_timer")


def kernel_time(ctx: Context, ref: Reference, sol: Session, bandwidth: float | None,
                tails: TailCalibration) -> None:
    """The second metric, CUDA Agent's: the profiler's summed device time per call (child.op_profile), on a
    fresh input set, with the last profiled call's output checked against the reference. It is the solution
    process's own account (its profiler), so it is reported beside the audited event time, never instead of
    it; a figure that beats the speed of light is withheld, with the reason."""
    checks = ctx.result.checks
    if ctx.device != "cuda":
        checks["kernel_time"] = {"measured": False, "why": "measured on CUDA devices only"}
        return
    rs = ref.session
    assert rs is not None
    seed = random.SystemRandom().randrange(1 << 31)
    where = "the profiled calls (kernel time)"
    with ctx.device_lock("kernel time", solution_runs=True):
        # The solution's last request (evaluate.py stops it next): its timing sets make room for the profiled one.
        reply = untrusted(sol, "profile", where, seed=seed, file="profiled.pt",
                          calls=KERNEL_TIME_CALLS, warmup=KERNEL_TIME_WARMUP, drop_sets=True)
    structure_problems(reply, where)
    with ctx.device_lock("kernel time reference", shared=True):
        trusted(rs, "trial", seed=seed, file="ref_profiled.pt", release=True)
    compare(ctx, rs.tensors("ref_profiled.pt"), read(sol, "profiled.pt", where), where)
    value = reply.get("kernel_time_us")
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        checks["kernel_time"] = {"measured": False, "why": "the profiler reported no usable figure"}
        return
    floor = limits.check(ctx.device, float(value), limits.least_bytes(ref.input_bytes, ref.output_bytes),
                         bandwidth)
    if not floor["ok"]:
        checks["kernel_time"] = {"measured": False, "reported_us": value, "why": (
            "the profiler's device time is below the speed of light for the bytes the problem moves; the "
            "process's own profile is not trusted there")}
        return
    checks["kernel_time"] = {"measured": True, "calls": KERNEL_TIME_CALLS, "warmup": KERNEL_TIME_WARMUP}
    ctx.result.kernel_time_us = float(value)
    busy = reply.get("device_busy_us")
    if isinstance(busy, int | float) and not isinstance(busy, bool) and math.isfinite(busy) and busy > 0 \
            and ctx.result.runtime_us:
        # A cross-check of the two clocks in the solution's process: the window holds a call's device work and the
        # window's own fixed cost, so its median cannot fall far below how long the device was busy per profiled
        # call (the union over streams; those calls run without the flush) plus that cost. A native forger of the
        # CUDA events alone (tests/exploits/solutions/forged/forge_event_half_cuda.py) reads about half
        # (busy_cross_check).
        checks["kernel_time"]["device_busy_us"] = round(float(busy), 2)
        checks["kernel_time"]["event_time_over_device_busy"] = round(ctx.result.runtime_us / float(busy), 3)
        window = tails.one_kernel_window_us
        if window > 0:
            checks["kernel_time"]["one_kernel_window_us"] = round(window, 2)
            checks["kernel_time"]["event_time_over_busy_and_window"] = round(
                ctx.result.runtime_us / (float(busy) + window), 3)
        forged = busy_cross_check(float(ctx.result.runtime_us), float(busy), window)
        if forged:
            guard_findings_first(ctx, sol)
            raise Verdict("rejected", forged, "timing_forged")


def guard_findings_first(ctx: Context, sol: Session) -> None:
    """Before a rejection by a timing heuristic: a rule the guards saw broken is the exact reason, so it is
    the one reported (a fallback hidden in a worker thread also looks like memoisation to the timer)."""
    try:
        integrity(ctx, sol)
    except Verdict as v:
        if v.verdict == "rejected":
            raise
    except Exception:  # noqa: BLE001 - the timing verdict stands
        pass


def integrity(ctx: Context, sol: Session) -> None:
    """The guards' findings in the solution's process: any is a rejection."""
    reply = untrusted(sol, "integrity", "reporting")
    findings = reply.get("findings")
    if not isinstance(findings, list):
        raise Verdict("rejected", "rule anti_cheat broken: the integrity report was tampered with", "anti_cheat")
    ctx.result.checks["integrity"] = findings[:20]
    if findings:
        f = findings[0] if isinstance(findings[0], dict) else {"rule": "anti_cheat", "detail": str(findings[0])}
        raise Verdict("rejected", f"rule {f.get('rule')} broken: {f.get('detail')}", str(f.get("rule")))


def speed_of_light(ctx: Context, ref: Reference) -> float | None:
    """The speed-of-light bound on the reported time (limits.py); returns the device's bandwidth it used."""
    median = ctx.result.runtime_us
    assert median is not None  # set by the timing, which comes first
    bandwidth = limits.cached_bandwidth(ctx.device_model)
    if bandwidth is None and ref.session is not None:
        # Measured once per device model, by the trusted child, while nothing else of ours runs.
        nbytes = (1 << 30) if ctx.device == "cuda" else (64 << 20)
        with ctx.device_lock("calibration"):
            bw = float(trusted(ref.session, "calibrate", bytes=nbytes)["bytes_per_s"])
        limits.store_bandwidth(ctx.device_model, bw, f"best of 10 copies of {nbytes} bytes")
        bandwidth = bw
    sol_check = limits.check(ctx.device, median, limits.least_bytes(ref.input_bytes, ref.output_bytes),
                             bandwidth)
    ctx.result.checks["speed_of_light"] = sol_check
    if not sol_check["ok"]:
        raise Verdict("rejected", f"rule faster_than_speed_of_light broken: {median:.2f} us to move "
                      f"{sol_check['least_bytes']} bytes is below the physical floor of "
                      f"{sol_check['floor_us']:.2f} us on this device", "faster_than_speed_of_light")
    return bandwidth


def work_outside_timer(wall_per_call_us: float, median_us: float, head_start_max_us: float) -> bool:
    """On a GPU: do back-to-back calls by the parent's clock take more than the timed calls can explain? Four times
    the median plus 200 us, and the head start's cap on top: the host's time in forward up to the flush plus the
    head start is outside the window by design (KERNELHUB_HEAD_START_MAX_US), so an honest host-bound forward's
    back-to-back calls exceed its window by up to that."""
    return wall_per_call_us > 4 * median_us + 200 + head_start_max_us


class UntrustedTiming:
    """Adapts the solution's session to timing.run_timing: a failure is a verdict."""

    def __init__(self, session: Session, settings: config.RunnerConfig) -> None:
        self.session, self.settings = session, settings

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        return untrusted(self.session, op, f"timing ({op})", **fields)


class TrustedTiming(UntrustedTiming):
    """Adapts a baseline's session (the problem's own code) to timing.run_timing."""

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        # torch.compile compiles on the first calls
        timeout = self.settings.load_timeout_s if op == "warmup" else None
        return trusted(self.session, op, timeout=timeout, **fields)
