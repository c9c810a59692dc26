"""The second look of run_timing's statistical comparisons (timing._judge, timing.SECOND_LOOK_RULES): where the clock
audit or the fresh-input comparison would reject the calls so far, the loop runs on to twice their number and the
rule decides on all of them. On an H100 on 2026-12-07 an honest 10 us relu * scale, evaluated right after a kill -9 of
another evaluation, was rejected `timing_forged` by an audit of three requests that all read 161 us a call slower
than the null calls (docs/gpu_runs/2026-12-07_1557_h100x1/killed_1614.log); evaluated alone the same minute it
read 29 and -57 us. The figures below are of that shape, on the wall clock of a GPU."""

import pytest

from gpu_runner import timing

NULL_US = 50.0  # the trusted null call of a request, per call
CALLS = 8  # calls per request


def _loop(reported_us: float) -> timing._Loop:
    loop = timing._Loop(None, device="cuda", check_batch=None, null_call=None, cpu_clock=None, tail_allowance_us=None)
    loop.times = [reported_us] * 48
    loop.calls = 48
    loop.fresh_times, loop.reused_times = [reported_us] * 6, [reported_us] * 24
    return loop


def _audits(own_us: float, n: int) -> list[timing.AuditEntry]:
    """n audited calls whose requests took own_us per call beyond the null call, by the parent's clock."""
    return [timing.AuditEntry(0.0, NULL_US + own_us, NULL_US, None, None, calls=CALLS) for _ in range(n)]


def test_an_audit_that_would_reject_asks_for_as_many_calls_again_first():
    loop = _loop(500.0)
    loop.audits = _audits(900.0, 24)  # every request 400 us a call slower than the kernel's honest 500
    with pytest.raises(timing._SecondLook) as look:
        timing._judge(loop, "cuda", True, None)
    record = look.value.record
    assert record["rule"] == "timing_forged" and "took at least 900.0 us" in record["message"]
    assert (record["calls"], record["audited_calls"], record["fresh_calls"], record["reused_calls"]) == (48, 24, 6, 24)


def test_a_disturbance_of_the_first_calls_alone_is_outweighed_by_the_second_half():
    loop = _loop(500.0)
    loop.audits = _audits(900.0, 24)
    with pytest.raises(timing._SecondLook) as look:
        timing._judge(loop, "cuda", True, None)
    loop.audits += _audits(505.0, 24)  # the same kernel, undisturbed
    audit, fresh = timing._judge(loop, "cuda", True, look.value.record)
    assert audit is not None and audit["ok"] and audit["calls"] == 48
    assert fresh is not None and fresh["ok"]


def test_a_forged_clock_is_rejected_again_over_all_the_calls_and_the_message_says_so():
    loop = _loop(500.0)  # reported at half of what every request took
    loop.audits = _audits(1000.0, 24)
    with pytest.raises(timing._SecondLook) as look:
        timing._judge(loop, "cuda", True, None)
    loop.audits += _audits(1000.0, 24)
    loop.calls = 96
    with pytest.raises(timing.TimingRejected) as rejected:
        timing._judge(loop, "cuda", True, look.value.record)
    assert rejected.value.rule == "timing_forged"
    assert "read twice: over the first 48 calls, then over all 96" in rejected.value.message
    assert rejected.value.audit is not None and rejected.value.audit["calls"] == 48


def test_a_kernel_that_skips_work_on_reused_sets_is_rejected_after_its_second_look_too():
    loop = _loop(6.0)
    loop.fresh_times, loop.reused_times = [40.0] * 6, [6.0] * 24
    with pytest.raises(timing._SecondLook) as look:
        timing._judge(loop, "cuda", True, None)
    assert look.value.record["rule"] == "memoization"
    loop.fresh_times += [40.5] * 6
    loop.reused_times += [6.1] * 24
    with pytest.raises(timing.TimingRejected, match="reuses work from earlier calls.*read twice"):
        timing._judge(loop, "cuda", True, look.value.record)


def test_the_baselines_comparison_is_not_judged_and_needs_no_second_look():
    loop = _loop(6.0)
    loop.fresh_times, loop.reused_times = [40.0] * 6, [6.0] * 24
    audit, fresh = timing._judge(loop, "cuda", False, None)
    assert audit is None and fresh is not None and not fresh["ok"]
