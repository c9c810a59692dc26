"""The host's head start on a GPU (child.HEAD_START_MAX_US): how long the GPU spins after the flush, from how much
longer the timing loop takes to launch forward than a tight loop of plain calls in the same process, and what the
parent passes on to the clock audit's null call. The spin itself runs only on CUDA (tests marked cuda,
benchmarks/timing_fidelity.py); these are its rules."""

from __future__ import annotations

import collections
import math

import pytest

from gpu_runner import child
from gpu_runner.child import HEAD_START_SAMPLES, Harness
from gpu_runner.config import RunnerConfig
from gpu_runner.timing import MAX_SPIN_CYCLES_PER_US, _head_starts

CAP = 150.0


@pytest.fixture
def head_start_on(monkeypatch):
    monkeypatch.setattr(child, "HEAD_START_MAX_US", CAP)


def test_it_is_on_as_the_evaluator_ships_and_zero_turns_it_off(monkeypatch):
    assert RunnerConfig.from_env({}).head_start_max_us == CAP
    assert RunnerConfig.from_env({"KERNELHUB_HEAD_START_MAX_US": "0"}).head_start_max_us == 0.0
    monkeypatch.setattr(child, "HEAD_START_MAX_US", 0.0)
    harness = _harness(1980.0)
    harness.host_recent[True].extend([90.0] * HEAD_START_SAMPLES)
    harness.host_tight = [20.0] * 32
    assert harness._head_start_us(True) == 0.0
    assert _head_starts([12000, 80000], 2, 0.0) == [0, 0]  # the null call spins no more than the cap either


def _harness(rate: float) -> Harness:
    harness = Harness.__new__(Harness)  # only the head start's own state
    harness.spin_cycles_per_us = rate
    harness.host_recent = {own: collections.deque(maxlen=HEAD_START_SAMPLES) for own in (True, False)}
    harness.host_tight = []
    return harness


def test_the_head_start_covers_what_the_timing_loop_adds_to_a_tight_loop(head_start_on):
    harness = _harness(1980.0)
    assert harness._head_start_us(True) == 0.0  # nothing measured yet: as a plain timing
    harness.host_recent[True].extend([70.0] * 27 + [95.0] * 5)
    assert harness._head_start_us(True) == 0.0  # no tight loop yet: none
    harness.host_tight = sorted([18.0] * 28 + [25.0] * 4)
    # A fifth more than the difference of the 90th percentiles (95 - 25 us).
    assert math.isclose(harness._head_start_us(True), 1.2 * (95.0 - 25.0))


def test_a_side_that_launches_as_fast_as_a_tight_loop_gets_none(head_start_on):
    # torch.compile's own launch on a short kernel (88 us on the H100 host, 2026-12-05) is what a plain timing
    # carries beyond the flush: where the timing loop adds nothing to it, the window keeps it, as plain events do.
    harness = _harness(1980.0)
    harness.host_recent[True].extend([88.0] * HEAD_START_SAMPLES)
    harness.host_tight = [88.0] * 32
    assert harness._head_start_us(True) == 0.0
    harness.host_tight = [95.0] * 32  # a tight loop slower than the timing loop: none either, never negative
    assert harness._head_start_us(True) == 0.0


def test_the_null_calls_empty_forward_keeps_its_own_account(head_start_on):
    harness = _harness(1980.0)
    harness.host_recent[True].extend([70.0] * HEAD_START_SAMPLES)
    harness.host_tight = [20.0] * 32
    assert harness._head_start_us(False) == 0.0  # the model's host time does not set it
    harness.host_recent[False].append(3.0)
    assert math.isclose(harness._head_start_us(False), 1.2 * 3.0 + 10.0)


def test_the_head_start_is_capped_and_forgets_old_calls(head_start_on):
    harness = _harness(1980.0)
    harness.host_tight = [20.0] * 32
    harness.host_recent[True].extend([5000.0] * HEAD_START_SAMPLES)  # 5 ms on the host a call in the timing loop
    assert harness._head_start_us(True) == CAP
    harness.host_recent[True].extend([40.0] * HEAD_START_SAMPLES)
    assert math.isclose(harness._head_start_us(True), 1.2 * 20.0)


def test_no_spin_kernel_means_no_head_start(head_start_on):
    harness = _harness(0.0)  # a torch without torch.cuda._sleep, or a CPU
    harness.host_recent[True].extend([100.0] * 10)
    harness.host_tight = [10.0] * 32
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


class _CudaStandIns:
    """torch.cuda's events, stream, flush buffer and spin as the window uses them, logging the order of what is
    queued, and a forward whose host time is set per call: the window's own sequence, checked without a GPU."""

    def __init__(self, harness: Harness, host_us: list[float]) -> None:
        import contextlib
        import itertools
        import types

        self.log: list[object] = []
        self.guard_entries: list[dict] = []
        clock = itertools.count()
        self.now = 0.0
        log = self.log

        class Event:
            def __init__(self, enable_timing: bool = True) -> None:
                pass

            def record(self, stream: object = None) -> None:
                log.append("event")

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, other: object) -> float:
                return 0.05

        def forward(*inputs: object) -> object:
            log.append("forward")
            self.now += host_us[min(next(clock), len(host_us) - 1)] * 1e-6
            return object()

        @contextlib.contextmanager
        def forward_guard(policy: dict):
            self.guard_entries.append(policy)
            yield

        harness.device = "cuda"
        harness.Event = Event
        harness.flush_buf = types.SimpleNamespace(zero_=lambda: log.append("flush"))
        harness.cuda_spin = lambda cycles: log.append(("spin", cycles))
        harness.cuda_sync = lambda: None
        harness.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
            current_stream=lambda: types.SimpleNamespace(cuda_stream=0)))
        harness.perf = lambda: self.now
        harness.monotonic = lambda: 0.0
        harness.drain = None
        harness.no_grad = contextlib.nullcontext
        harness.guards = types.SimpleNamespace(forward_guard=forward_guard, last_call_recorded=lambda: False)
        harness.policy = {"allow_torch": ["mm"]}
        harness.model = forward
        harness.head_starts, harness.phases_us = [], {}


def test_the_tight_loop_times_plain_calls_inside_one_guard_entry(head_start_on):
    harness = _harness(1000.0)
    # The tight loop's calls launch in 20 us (its first TIGHT_WARMUP, slower, left out); the timing loop's in 80.
    host = [500.0] * child.TIGHT_WARMUP + [20.0] * child.TIGHT_CALLS + [80.0] * 100
    cuda = _CudaStandIns(harness, host)
    harness._measure_tight([1])
    assert cuda.guard_entries == [{"allow_torch": ["mm"], "record_ops": False}]  # entered once, no op record
    assert len(harness.host_tight) == child.TIGHT_CALLS
    assert all(math.isclose(h, 20.0) for h in harness.host_tight)
    # Each call as a plain event timing makes it: the flush, the start event, forward, the end event.
    assert cuda.log[:8] == ["flush", "event", "forward", "event"] * 2
    cuda.log.clear()
    for _ in range(HEAD_START_SAMPLES):
        harness._timed_call([1])
    assert len(cuda.guard_entries) == 1 + HEAD_START_SAMPLES  # each timed call enters the guard itself
    # The first timed call has the tight loop's figures only to go on (none of its own yet): no head start; once
    # its calls launch in 80 us, a fifth more than the 60 us the timing loop adds, in GPU cycles at 1000 a us.
    assert harness.head_starts[0] == 0
    last = harness.head_starts[-1]
    assert abs(last - 1.2 * 60.0 * 1000.0) <= 1
    assert cuda.log[-5:] == ["flush", ("spin", last), "event", "forward", "event"]
