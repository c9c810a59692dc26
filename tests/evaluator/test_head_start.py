"""The host's head start on a GPU (child.HEAD_START_MAX_US): how long the GPU spins after the flush, from the host's
recent time in forward, and what the parent passes on to the clock audit's null call. The spin itself runs only on
CUDA (tests marked cuda, benchmarks/timing_fidelity.py); these are its rules."""

from __future__ import annotations

import collections
import math

import pytest

from gpu_runner import child
from gpu_runner.child import HEAD_START_MEASURED_CAP_US, HEAD_START_SAMPLES, Harness
from gpu_runner.config import RunnerConfig
from gpu_runner.timing import MAX_SPIN_CYCLES_PER_US, _head_starts

CAP = HEAD_START_MEASURED_CAP_US


@pytest.fixture
def head_start_on(monkeypatch):
    # Off in the evaluator as it ships (child.HEAD_START_MAX_US is 0: work on another stream could run while the
    # GPU waits); these are its rules with the cap the H200 runs had.
    monkeypatch.setattr(child, "HEAD_START_MAX_US", CAP)


def test_it_is_off_as_the_evaluator_ships():
    harness = _harness(1980.0)
    harness.host_recent[True].extend([40.0] * 27 + [160.0] * 5)
    assert child.HEAD_START_MAX_US == 0.0 and RunnerConfig.from_env({}).head_start_max_us == 0.0
    assert harness._head_start_us(True) == 0.0
    assert _head_starts([12000, 80000], 2, 0.0) == [0, 0]  # the null call spins no more than the cap either


def _harness(rate: float) -> Harness:
    harness = Harness.__new__(Harness)  # only the head start's own state
    harness.spin_cycles_per_us = rate
    harness.host_recent = {own: collections.deque(maxlen=HEAD_START_SAMPLES) for own in (True, False)}
    return harness


def test_the_head_start_covers_the_hosts_recent_time_in_forward(head_start_on):
    harness = _harness(1980.0)
    assert harness._head_start_us(True) == 0.0  # nothing measured yet: as a plain timing
    harness.host_recent[True].extend([40.0] * 27 + [60.0] * 5)
    # A fifth more than the 90th percentile (60 us), plus 10 us for the start event.
    assert math.isclose(harness._head_start_us(True), 1.2 * 60.0 + 10.0)
    # The null call's forward keeps its own account: the model's host time does not set it.
    assert harness._head_start_us(False) == 0.0
    harness.host_recent[False].append(3.0)
    assert math.isclose(harness._head_start_us(False), 1.2 * 3.0 + 10.0)


def test_the_head_start_is_capped_and_forgets_old_calls(head_start_on):
    harness = _harness(1980.0)
    harness.host_recent[True].extend([5000.0] * HEAD_START_SAMPLES)  # a forward that spends 5 ms on the host
    assert harness._head_start_us(True) == CAP
    harness.host_recent[True].extend([20.0] * HEAD_START_SAMPLES)
    assert math.isclose(harness._head_start_us(True), 1.2 * 20.0 + 10.0)


def test_no_spin_kernel_means_no_head_start(head_start_on):
    harness = _harness(0.0)  # a torch without torch.cuda._sleep, or a CPU
    harness.host_recent[True].extend([100.0] * 10)
    assert harness._head_start_us(True) == 0.0


def test_the_parent_bounds_the_head_starts_a_child_reports(head_start_on):
    # The null call spins as many GPU cycles as the solution's child said it did: its word, so bounded (by the
    # cap at the fastest clock of any GPU; the trusted process bounds it again at its own rate), and ignored
    # where it is not a list of whole numbers, one per call of the run.
    most = int(CAP * MAX_SPIN_CYCLES_PER_US)
    assert _head_starts([12000, 10**12, -5], 3, CAP) == [12000, most, 0]
    assert _head_starts([12000, 14000], 3, CAP) is None
    assert _head_starts([12000, float("nan"), 1], 3, CAP) is None
    assert _head_starts([12000, 7.5, 1], 3, CAP) is None
    assert _head_starts([12000, "7", 1], 3, CAP) is None
    assert _head_starts(None, 1, CAP) is None
    assert _head_starts([True], 1, CAP) is None


def test_work_outside_the_timer_allows_the_hosts_head_start(head_start_on):
    from gpu_runner.evaluate import work_outside_timer

    # An honest forward that spends 370 us launching on the host and 40 us on the GPU: with the head start its
    # window reads 40 us, and its back-to-back calls take the host's 370 us. Not work outside the timer.
    assert not work_outside_timer(370.0, 40.0, CAP)
    # Work left running after forward returned: back-to-back calls take far longer than the window explains.
    assert work_outside_timer(1200.0, 40.0, CAP)
    assert work_outside_timer(4 * 1000.0 + 200 + CAP + 1, 1000.0, CAP)
    assert not work_outside_timer(4 * 1000.0 + 200 + CAP - 1, 1000.0, CAP)
