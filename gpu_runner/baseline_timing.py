"""The baselines' phase: eager's and torch.compile's times (and kernel times) for the problem, from the host's
cache or measured now by trusted children with the same timing loop, window and tail allowance as the solution.
"""

from __future__ import annotations

import math
import random
from typing import Any

from gpu_runner import baselines, builds, sysinfo, timing
from gpu_runner.context import Context, log
from gpu_runner.reference import Reference
from gpu_runner.session import EvaluatorError, trusted
from gpu_runner.solution_timing import KERNEL_TIME_CALLS, KERNEL_TIME_WARMUP, TailCalibration, TrustedTiming


def baselines_phase(ctx: Context, ref: Reference, tails: TailCalibration) -> None:
    """Eager's and torch.compile's figures for this problem on this device model and software: from the cache
    (baselines.py), or timed now in trusted children exactly as the solution was, and kept where better."""
    versions = sysinfo.versions(ctx.child_versions, cxx=builds.toolchain(False)["cxx"])
    for mode in ("eager", "compile"):
        key = baselines.key(problem_hash=ctx.result.problem_hash, device_model=ctx.device_model,
                            versions=versions, mode=mode)
        stats = baselines.load(key)
        if stats is None or baselines.worth_remeasuring(stats):
            fresh = _time_baseline(ctx, ref, tails, mode)
            if fresh.get("median_us"):
                stats = baselines.keep_better(stats, fresh)
                baselines.store(key, stats)
            elif stats is None:
                stats = fresh
        else:
            stats = {**stats, "cached": True}
        ctx.result.set_baseline(mode, stats, stats.get("kernel_time_us"))


def _time_baseline(ctx: Context, ref: Reference, tails: TailCalibration, mode: str) -> dict[str, Any]:
    """One baseline timed now (eager in the reference's own child, compile in a fresh one); its failure is
    recorded, never the solution's."""
    try:
        if mode == "eager":
            session = ref.session
        else:
            session = ctx.session("compile")
            # torch.compile compiles on the first call: under the shared hold, before the timed one.
            with ctx.device_lock("baseline compile: load and compile", shared=True):
                trusted(session, "load", timeout=ctx.settings.load_timeout_s, **ctx.load_fields("compile"))
                trusted(session, "prepare_timing", seeds=ref.set_seeds, copy_sets=ref.changes_inputs)
                trusted(session, "warmup", timeout=ctx.settings.load_timeout_s, calls=1, max_s=1.0)
        assert session is not None
        with ctx.device_lock(f"baseline {mode}"):
            allowance = tails.allowance(session)
            t = timing.run_timing(TrustedTiming(session, ctx.settings), device=ctx.device, n_sets=ref.n_sets,
                                  tail_allowance_us=allowance, window_offset_us=tails.drain_us,
                                  settings=ctx.settings)
        stats = {**t.stats, "device": ctx.device_model}
        if t.tail is not None:
            stats["tail_added_median_us"] = t.tail["added_median_us"]
        if ctx.device == "cuda":
            with ctx.device_lock(f"baseline {mode} kernel time"):
                prof = trusted(session, "profile", seed=random.SystemRandom().randrange(1 << 31),
                               calls=KERNEL_TIME_CALLS, warmup=KERNEL_TIME_WARMUP)
            value = prof.get("kernel_time_us")
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                stats["kernel_time_us"] = float(value)
        return {k: v for k, v in stats.items() if not (isinstance(v, float) and math.isnan(v))}
    except (EvaluatorError, timing.TimingRejected) as e:
        log(f"baseline {mode} failed: {e}")
        return {"error": str(e)[:2000]}
