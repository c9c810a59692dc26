"""The clock audit's decision (gpu_runner/timing.py) and the parent's own readings of a child (sandbox.py):
the per-call bound that stops times forged by native code. The evaluations that exercise it end to end are
tests/exploits/test_forged_timing.py (CPU, and CUDA on the H200)."""

import os
import subprocess
import sys
import time

import pytest

from gpu_runner import sandbox, timing


def test_the_median_lower_bound_is_an_order_statistic_below_the_median():
    values = [float(v) for v in range(1, 101)]
    bound = timing.median_lower_bound(values)
    assert bound in values
    assert 35 <= bound < 50.5  # about 1.96 standard errors of a median of 100 below it
    assert timing.median_lower_bound([5.0, 1.0, 3.0]) == 1.0  # few values: the smallest


def _audits(reported: float, own: float, null: float, n: int = 30, device: str = "cuda") -> list[tuple]:
    # (reported us, request wall us, null wall us, request's busiest-thread CPU us, null's)
    return [(reported, null + own, null, 0.0, 0.0) for _ in range(n)]


def test_a_time_reported_at_half_of_what_the_parents_clock_saw_is_refused():
    audit = timing.clock_audit(500.0, _audits(500.0, own=1000.0, null=300.0), "cuda")
    assert audit["ok"] is False
    assert audit["parent_clock_lower_bound_us"] == pytest.approx(1000.0)
    assert audit["floor_us"] == pytest.approx(0.8 * 1000.0 - 60.0 - 0.1 * 300.0)


def test_the_floor_leaves_a_tenth_of_the_harness_cost_for_its_asymmetry():
    # Null calls of 3 ms (outputs of gigabytes): 300 us more slack, so an honest 1 ms kernel whose requests cost
    # 350 us more than its null calls (its allocator holding a batch of outputs) still passes.
    assert timing.clock_audit(1000.0, _audits(1000.0, own=1350.0, null=3000.0), "cuda")["ok"] is True


def test_an_honest_time_passes_and_so_does_one_within_the_ratio():
    assert timing.clock_audit(1000.0, _audits(1000.0, own=1010.0, null=300.0), "cuda")["ok"] is True
    # 0.8 x 1000 - 60 - 0.1 x 300 = 710: a forgery to 0.85 x is within the bound, by design (at most 1 / 0.8)
    assert timing.clock_audit(850.0, _audits(850.0, own=1000.0, null=300.0), "cuda")["ok"] is True


def test_a_run_of_calls_in_one_request_spreads_the_requests_slack_over_its_calls():
    # The slack is a request's; a run of 8 calls in one request leaves an eighth of it to each call. The CPU
    # figures of a paced clock in runs of 8 (2.4 ms calls reported at 1.41 ms): passed with the whole slack per
    # call, refused with its share.
    one = [(1406.0, 2376.0 + 2600.0, 2376.0, 2376.0 + 2600.0, 2376.0, 0, 0, 1) for _ in range(30)]
    runs = [entry[:7] + (8,) for entry in one]
    assert timing.clock_audit(1406.0, one, "cpu")["ok"] is True
    audit = timing.clock_audit(1406.0, runs, "cpu")
    assert audit["ok"] is False and audit["calls_per_request"] == 8
    assert audit["floor_us"] == pytest.approx(0.7 * 2600.0 - 300.0 / 8 - 0.1 * 2376.0)
    # An honest kernel in runs still passes.
    assert timing.clock_audit(2450.0, runs, "cpu")["ok"] is True


def test_noise_the_solution_adds_to_its_own_requests_cannot_lower_the_bound():
    quiet = _audits(400.0, own=1000.0, null=300.0)
    # Half of its calls made slower by milliseconds: the differences only grow, the bound does not fall.
    noisy = [(r, w + (5000.0 if i % 2 else 0.0), n, c, nc) for i, (r, w, n, c, nc) in enumerate(quiet)]
    assert timing.clock_audit(400.0, noisy, "cuda")["parent_clock_lower_bound_us"] >= 1000.0
    assert timing.clock_audit(400.0, noisy, "cuda")["ok"] is False


def test_a_loaded_host_makes_the_audit_say_less_instead_of_failing_an_honest_kernel():
    # The null calls as slow as the solution's or slower, by chance: the bound falls below the reported time.
    audits = [(1000.0, 1300.0 + (i % 7) * 900.0, 300.0 + (i % 5) * 1200.0, 0.0, 0.0) for i in range(30)]
    audit = timing.clock_audit(1000.0, audits, "cuda")
    assert audit["ok"] is True and audit["parent_clock_lower_bound_us"] < 1000.0


def test_on_a_cpu_the_busiest_threads_cpu_time_is_the_clock():
    # Wall times swamped by waiting for a CPU; the CPU times still show 2 ms of own work against 0.5 reported.
    audits = [(500.0, 90000.0, 95000.0, 2300.0, 300.0) for _ in range(20)]
    audit = timing.clock_audit(500.0, audits, "cpu")
    assert audit["clock"] == "thread CPU and run-queue time"
    assert audit["ok"] is False
    # Without scheduler statistics (all zero) the wall clock is used.
    assert timing.clock_audit(500.0, [(500.0, 900.0, 300.0, 0.0, 0.0)] * 20, "cpu")["clock"] == "wall"


SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


@pytest.fixture
def spinning_child(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True)
    child = sandbox.Child(proc=proc, channel=None, workdir=tmp_path, marker="test")  # type: ignore[arg-type]
    yield child
    proc.kill()
    proc.wait()


def test_thread_cpu_time_is_read_from_the_kernel_for_the_childs_threads(spinning_child):
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat"):
        pytest.skip("this kernel keeps no scheduler statistics")
    before = sandbox.thread_cpu_ns(spinning_child)
    time.sleep(0.3)
    after = sandbox.thread_cpu_ns(spinning_child)
    assert spinning_child.proc.pid in after
    spent = sandbox.busiest_thread_us(before, after)
    assert 0 < spent <= 0.3e6 * 1.05 + 20000  # a thread cannot run longer than the wall time that passed


THREADS = """
import threading, time
def spin():
    end = time.monotonic() + 0.05
    while time.monotonic() < end: pass
end = time.monotonic() + 30
while time.monotonic() < end:
    t = threading.Thread(target=spin); t.start(); t.join()
"""


def test_cpu_time_in_threads_that_came_and_went_makes_the_reading_say_nothing(tmp_path):
    # Work handed to a thread that exits before the second reading would vanish from the per-thread times: the
    # process's own total shows it, and the reading gives None (that audit entry then uses the wall clock).
    proc = subprocess.Popen([sys.executable, "-c", THREADS], start_new_session=True)
    child = sandbox.Child(proc=proc, channel=None, workdir=tmp_path, marker="test")  # type: ignore[arg-type]
    try:
        time.sleep(0.3)
        if not sandbox.thread_cpu_ns(child):
            pytest.skip("this kernel keeps no scheduler statistics")
        seen = []
        for _ in range(5):
            before = sandbox.thread_cpu_ns(child)
            time.sleep(0.4)
            seen.append(sandbox.busiest_thread_us(before, sandbox.thread_cpu_ns(child)))
        assert None in seen, seen
    finally:
        proc.kill()
        proc.wait()


def test_a_thread_kept_waiting_for_a_cpu_counts_its_wait(tmp_path):
    # The child and a second spinner share one CPU: each runs about half the time and waits on the run queue the
    # other half. Its work took the whole wall time; its CPU time alone says half (a clock forged to half speed
    # would pass a CPU-time audit there).
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    cpu = sorted(os.sched_getaffinity(0))[0]
    procs = [subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True) for _ in range(2)]
    try:
        for p in procs:
            os.sched_setaffinity(p.pid, {cpu})
        child = sandbox.Child(proc=procs[0], channel=None, workdir=tmp_path, marker="test")  # type: ignore[arg-type]
        time.sleep(0.2)
        before = sandbox.thread_cpu_ns(child)
        if not before:
            pytest.skip("this kernel keeps no scheduler statistics")
        t0 = time.perf_counter()
        time.sleep(0.5)
        after = sandbox.thread_cpu_ns(child)
        wall_us = (time.perf_counter() - t0) * 1e6
        spent = sandbox.busiest_thread_us(before, after)
        cpu_only = max(after[t] - before[t] for t in after if t >= 0) / 1000.0
        assert cpu_only < 0.75 * wall_us, (cpu_only, wall_us)  # it did share the CPU
        assert 0.85 * wall_us < spent <= wall_us * 1.05 + 20000, (spent, cpu_only, wall_us)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_run_queue_waits_add_to_the_thread_that_waited():
    waits = sandbox.RUN_DELAYS
    before = {1: 0, 2: 0, sandbox.PROCESS_TICKS: 0, waits: {1: 0, 2: 0}}
    after = {1: 10**6, 2: 4 * 10**5, sandbox.PROCESS_TICKS: 0, waits: {1: 10**5, 2: 10**6}}
    # Thread 1: 1 ms ran + 0.1 ms waited; thread 2: 0.4 + 1 ms. The longest span is thread 2's.
    assert sandbox.busiest_thread_us(before, after) == 1400.0
    # A thread without a wait reading counts its CPU time alone.
    assert sandbox.busiest_thread_us({**before, waits: {}}, {**after, waits: {}}) == 1000.0


def test_a_busiest_thread_reading_with_other_threads_at_its_ends_says_nothing():
    assert sandbox.busiest_thread_us({1: 0, 2: 0, sandbox.PROCESS_TICKS: 0}, {1: 10**6, sandbox.PROCESS_TICKS: 0}) is None
    assert sandbox.busiest_thread_us({1: 0, sandbox.PROCESS_TICKS: 0}, {1: 2 * 10**6, sandbox.PROCESS_TICKS: 0}) == 2000.0


def test_stopped_stops_the_childs_process_group_and_continues_it(spinning_child):
    def state() -> str:
        with open(f"/proc/{spinning_child.proc.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    time.sleep(0.1)
    with sandbox.stopped(spinning_child):
        time.sleep(0.1)
        assert state() == "T"
        if os.path.exists(f"/proc/{spinning_child.proc.pid}/schedstat"):
            before = sandbox.thread_cpu_ns(spinning_child)
            time.sleep(0.2)
            assert sandbox.busiest_thread_us(before, sandbox.thread_cpu_ns(spinning_child)) < 5000
    time.sleep(0.1)
    assert state() in ("R", "S")
