"""The fresh-input comparison (timing._fresh_check): calls on regenerated input sets against calls on reused ones.
On a GPU calls go in runs, and the statistics give each call of a run the run's mean; the comparison takes each
call's own figure, so that one slow call does not make a whole run of fresh calls look slow (on an H100 on
2026-12-05 an honest 6.6 us ReLU was rejected `memoization` against fresh calls at 29.5 us, in a timing cut short
by KERNELHUB_TIMING_BUDGET_S=1)."""

import pytest

from gpu_runner import timing


def _run(times: list[float]) -> list[float]:
    return [sum(times) / len(times)] * len(times)


def test_one_slow_call_in_a_run_of_fresh_calls_rejects_no_honest_kernel():
    fresh_own = [6.5, 6.7, 6.6, 190.0, 6.6, 6.8, 6.5, 6.6]  # one call of the run waited on something else
    reused = [6.6] * 16
    # Counted at the run's mean, every fresh call reads 29.5 us: the rule would have fired.
    with pytest.raises(timing.TimingRejected):
        timing._fresh_check(_run(fresh_own), reused, judged=True, runs=1)
    verdict = timing._fresh_check(fresh_own, reused, judged=True, runs=1)
    assert verdict["ok"] and verdict["fresh_runs"] == 1 and verdict["fresh_min_us"] == 6.5


def test_a_kernel_that_skips_work_on_reused_sets_is_still_rejected_call_by_call():
    fresh_own = [40.0, 41.0, 39.5, 40.5, 40.2, 39.8, 40.1, 40.3]  # recomputes everything on a new set
    reused = [6.0, 6.2, 5.9, 6.1] * 4  # only what changed
    with pytest.raises(timing.TimingRejected, match="reuses work from earlier calls"):
        timing._fresh_check(fresh_own, reused, judged=True, runs=1)


def test_the_loop_accounts_each_calls_own_figure_for_the_comparison_and_the_runs_mean_for_the_statistics():
    loop = timing._Loop(None, device="cuda", check_batch=None, null_call=None, cpu_clock=None, tail_allowance_us=None)
    own = [6.5, 6.7, 190.0, 6.6, 6.6, 6.6]
    batch = _run(own[:4]) + own[4:]
    perturb = [["fresh", 1], ["fresh", 2], ["fresh", 3], ["fresh", 4], [0, 1, 2], [0, 3, 4]]
    loop.account([0, 1, 2, 3, 0, 1], perturb, batch, [False] * 6, own)
    assert loop.fresh_times == own[:4] and loop.reused_times == own[4:]
    assert loop.times == batch  # the median and its spread stay on the figures the parent's clock checks
