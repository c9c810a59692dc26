"""The device's busy time per profiled call (child.busy_union_us): the union of the device activities' intervals,
recorded beside the event time as a cross-check of the solution process's two clocks (solution_timing.kernel_time).
Work on several streams at once counts once; gaps between kernels do not count."""

import pytest

from gpu_runner.child import _device_busy_us, busy_union_us


def test_overlapping_work_counts_once_and_gaps_not_at_all():
    # Two streams overlapping on 10-20, a gap 30-40, a kernel nested in another, an empty one.
    spans = [(0.0, 20.0), (10.0, 30.0), (40.0, 50.0), (42.0, 45.0), (60.0, 60.0)]
    assert busy_union_us(spans) == pytest.approx(40.0)
    assert busy_union_us(list(reversed(spans))) == pytest.approx(40.0)


def test_back_to_back_kernels_sum():
    assert busy_union_us([(0.0, 5.0), (5.0, 9.0), (9.0, 10.5)]) == pytest.approx(10.5)
    assert busy_union_us([]) == 0.0


def test_a_profile_without_device_events_gives_no_figure():
    """On a CPU (or a torch whose profiler names device events otherwise) there is nothing to cross-check."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.relu(torch.randn(64, 64))
    assert _device_busy_us(prof) is None
    assert _device_busy_us(object()) is None


def test_the_cross_check_rejects_a_median_far_below_the_busy_time_and_passes_honest_readings():
    """Figures of an H100 (2026-12-06 22:01, tests/exploits/test_forged_timing.py): honest ReLUs of 3.1 ms, 0.19 ms
    and 9 us read 0.91, 0.89 and 1.86 of their busy time; the CUDA event forged to answer half read 0.44 on the
    0.19 ms kernel (rejected), and 0.84 on the 9 us one, where the harness's fixed work in the window hides it
    (not caught: the rule's known limit)."""
    from gpu_runner.solution_timing import BUSY_RATIO_FLOOR, busy_cross_check

    for runtime, busy in [(3059.4, 3353.21), (188.05, 210.81), (8.92, 4.81)]:
        assert busy_cross_check(runtime, busy) is None, (runtime, busy)
    message = busy_cross_check(93.56, 211.04)
    assert message and "timing_forged" in message and "93.6 us" in message and "211.0 us" in message
    assert busy_cross_check(4.03, 4.81) is None
    # The edge: at the floor it passes, just under it not.
    assert busy_cross_check(BUSY_RATIO_FLOOR * 100.0, 100.0) is None
    assert busy_cross_check(BUSY_RATIO_FLOOR * 100.0 - 0.01, 100.0)
    assert busy_cross_check(50.0, 0.0) is None  # no busy figure: nothing to cross-check
