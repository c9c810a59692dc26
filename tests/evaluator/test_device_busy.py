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
    0.19 ms kernel (rejected). Without the window's fixed cost, the forgery on the 9 us kernel (0.84) passes."""
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


# (event median, busy time per profiled call, the trusted reference's window around a 1 us kernel), in us, read on
# an H100 on 2026-12-06 and -07 (docs/gpu_runs/2026-12-07_0751_h100x1/: fidelity_0807.json, honest_relu_0811.json,
# side_stream_0811.json; the forgeries' figures from the CUDA tests' output at 22:01 and 07:58).
HONEST_WITH_WINDOW = [
    (4.5, 1.08, 4.29),      # the add of KernelBench's example, 1 x 128
    (98.5, 101.53, 4.35),   # row mean, 8192 x 8192
    (187.6, 212.08, 4.06),  # relu * scale + bias, 4096 x 16384
    (10.17, 4.75, 4.1),     # the honest CUDA ReLU of relu_small_cuda
    (8.2, 4.76, 4.1),       # the side-stream ReLU on the same problem (accepted: its kernel stays in the window)
    (4356.0, 4461.42, 4.1),  # 33_BatchNorm at its size (the window's cost as the others')
    # The first run of 1.7.3 on a GPU (H100, 2026-12-07 16:02-16:13, docs/gpu_runs/2026-12-07_1557_h100x1/): the add's
    # three runs (its lowest reading, 0.699, the lowest honest one yet), row mean, relu * scale + bias.
    (3.78, 1.05, 4.35),
    (3.98, 1.05, 4.1),
    (5.07, 1.06, 4.35),
    (98.77, 103.16, 4.22),
    (191.11, 215.75, 4.19),
]
FORGED_WITH_WINDOW = [
    (4.03, 4.81, 4.1),  # relu_small_cuda's CUDA event halved, 2026-12-06 22:01
    (4.2, 4.76, 4.1),   # the same, 2026-12-07 07:58
    (93.56, 211.04, 4.1),  # relu_cuda's, 2026-12-06
    (4.6, 4.8, 4.2),  # relu_small_cuda's, rejected by 1.7.3 on the H100 at 15:57 on 2026-12-07 (0.51)
]


@pytest.mark.parametrize("runtime,busy,window", HONEST_WITH_WINDOW)
def test_honest_readings_pass_with_the_windows_fixed_cost_counted(runtime, busy, window):
    from gpu_runner.solution_timing import busy_cross_check

    assert busy_cross_check(runtime, busy, window) is None


@pytest.mark.parametrize("runtime,busy,window", FORGED_WITH_WINDOW)
def test_a_halved_event_on_a_kernel_of_microseconds_is_rejected_once_the_windows_cost_counts(runtime, busy, window):
    """The forgery on the 9 us kernel was credited by the busy time alone (0.84-0.88 of it, above the floor); the
    window's fixed cost, which any window holds, brings it to 0.45-0.47 of what an honest window holds."""
    from gpu_runner.solution_timing import busy_cross_check

    message = busy_cross_check(runtime, busy, window)
    assert message and "timing_forged" in message and f"plus {window:.1f} us" in message
    # A non-positive cost changes nothing (no calibration: the busy time alone, as before 1.7.3).
    assert busy_cross_check(runtime, busy, 0.0) == busy_cross_check(runtime, busy)
