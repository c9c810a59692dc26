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
