"""Between timed calls on a GPU a child waits for the next request polling, not asleep (child.Harness._stay_awake,
timing.AWAKE_S), and the cache flush is at least Triton's do_bench's. Tested here on real children and a real
socket pair: how long a child polls shows in its CPU time, which the kernel counts."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from gpu_runner import evaluate, sandbox, timing
from gpu_runner.child import CUDA_FLUSH_MIN_BYTES, MAX_AWAKE_S, cuda_flush_bytes
from gpu_runner.config import RunnerConfig
from gpu_runner.protocol import Channel


def test_polling_returns_as_soon_as_a_message_waits_and_gives_up_at_its_deadline():
    a, b = socket.socketpair()
    try:
        receiver = Channel(a)
        t0 = time.monotonic()
        assert receiver.spin_until_readable(t0 + 0.2) is False
        assert time.monotonic() - t0 >= 0.2
        threading.Timer(0.05, lambda: Channel(b).send({"op": "ping"})).start()
        t0 = time.monotonic()
        assert receiver.spin_until_readable(t0 + 5.0) is True
        assert time.monotonic() - t0 < 2.0
        assert receiver.recv() == {"op": "ping"}
    finally:
        a.close()
        b.close()


def _cpu_seconds_while_idle(session: evaluate.Session, wait_s: float) -> float:
    before = sandbox.thread_cpu_ns(session.child)
    time.sleep(wait_s)
    after = sandbox.thread_cpu_ns(session.child)
    # The threads' CPU time (the reading's negative keys are the process's totals and the run-queue waits).
    return sum(after.get(tid, 0) - ns for tid, ns in before.items() if tid >= 0) / 1e9


@pytest.fixture()
def child():
    session = evaluate.Session("eager", device="cpu", limits_=evaluate._limits("cpu", "eager"))
    try:
        session.request("ping")
        yield session
    finally:
        session.close()


def test_a_child_asked_to_stay_awake_polls_until_then_and_otherwise_sleeps(child):
    child.request("ping")
    assert _cpu_seconds_while_idle(child, 0.6) < 0.1  # asleep in recv: no CPU time
    child.request("ping", stay_awake_s=0.5)
    busy = _cpu_seconds_while_idle(child, 0.8)
    assert 0.25 <= busy <= 0.7, busy  # polled for about the half second asked, then slept
    # Still answers at once afterwards.
    assert child.request("ping")["ok"] is True


def test_a_request_cannot_keep_a_child_polling_for_longer_than_the_bound(child):
    child.request("ping", stay_awake_s=1e9)
    busy = _cpu_seconds_while_idle(child, MAX_AWAKE_S + 1.0)
    assert busy <= MAX_AWAKE_S + 0.3, busy
    child.request("ping", stay_awake_s="soon")  # not a number: no polling, no error
    assert _cpu_seconds_while_idle(child, 0.5) < 0.1


def test_only_gpu_timing_keeps_children_awake_and_the_flush_is_at_least_do_benchs():
    # On a CPU a polling child would take a core from the calls being timed.
    assert timing.AWAKE_S["cpu"] == 0.0 and 0 < timing.AWAKE_S["cuda"] <= MAX_AWAKE_S
    assert CUDA_FLUSH_MIN_BYTES == 256 << 20
    assert cuda_flush_bytes(50 << 20) == 256 << 20  # an H100/H200-sized L2: do_bench's buffer
    assert cuda_flush_bytes(200 << 20) == 400 << 20  # a larger L2: twice it


def test_short_gpu_calls_are_timed_in_runs_and_long_ones_one_per_request():
    assert timing.run_length("cuda") == timing.RUN_CALLS["cuda"] > 1
    assert timing.run_length("cuda", 50.0) == timing.RUN_CALLS["cuda"]
    assert timing.run_length("cuda", timing.LONG_CALL_US) == 1
    assert timing.run_length("cpu") == 1
    # KERNELHUB_RUN_CALLS (config.RunnerConfig.run_calls) overrides, up to 100 calls a request.
    assert timing.run_length("cpu", override=RunnerConfig.from_env({"KERNELHUB_RUN_CALLS": "8"}).run_calls) == 8
    assert timing.run_length("cpu", override=100000) == 100


def test_runs_cover_the_batch_in_order_and_never_mix_regenerated_sets_with_reused_ones():
    import random

    rng = random.Random(5)
    for batch in (4, 10, 37, 100):
        fresh = timing._fresh_positions(rng, batch, 8)
        assert len(fresh) == -(-batch // timing.FRESH_ONE_IN)
        assert max(fresh) - min(fresh) == len(fresh) - 1  # one block: the other runs hold none
        runs = timing._runs(batch, 8, fresh)
        assert [p for run in runs for p in run] == list(range(batch))
        assert all(1 <= len(run) <= 8 for run in runs)
        assert all(len({p in fresh for p in run}) == 1 for run in runs)
    # One call per request (the CPU): anywhere in the batch, as before.
    assert timing._runs(6, 1, {1, 4}) == [[0], [1], [2], [3], [4], [5]]
