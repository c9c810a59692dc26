"""The host's memory ledger (gpu_runner/memory_ledger.py): evaluations that run at once plan their memory together.
What another evaluation reserved counts until it ends, however it ends (kill -9 included: its entry is then
removed, and said so); one that fits only alone waits, and gives up with the holders named; and two real
evaluations that fit the host's memory one at a time run one after the other, both accepted (issue 13)."""

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_runner import memory_ledger, worker
from gpu_runner.config import RunnerConfig
from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import HONEST, PROBLEM, evaluations_at_once

REPO_ROOT = Path(__file__).resolve().parents[2]
GiB = 1 << 30

HOLD_IN_ANOTHER_PROCESS = """
import sys, time
from gpu_runner import memory_ledger
key, host_b, device_b, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
r = memory_ledger.reserve(key, lambda others: (True, host_b, device_b), timeout_s=5, label="test holder")
print("held", flush=True)
time.sleep(seconds)
r.release()
"""


def _holder(cache: Path, key: str, host_b: int, device_b: int, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_IN_ANOTHER_PROCESS, key, str(host_b), str(device_b),
                             str(seconds)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "KERNELHUB_CACHE_DIR": str(cache)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@contextlib.contextmanager
def _held(cache: Path, key: str, host_b: int, device_b: int) -> Iterator[subprocess.Popen]:
    """Another evaluation's reservation for the duration of the block (its process killed at the end)."""
    proc = _holder(cache, key, host_b, device_b, 30)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "memory").glob("*.json"))


def _entry(path: Path) -> dict:
    """An entry as the ledger's readers see it: read under the ledger's lock, as its writers write (a rewrite
    truncates then writes, so a read beside a replan that rewrites it could find it empty)."""
    with memory_ledger._ledger_locked(path.parent):
        return json.loads(path.read_text())


def test_another_evaluations_reservation_counts_until_it_is_killed(tmp_path, capfd):
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "GPU-aaaa", 3 * GiB, 5 * GiB, 60)
    try:
        held = memory_ledger.held_by_others(settings)
        assert held.host_bytes == 3 * GiB and held.on("GPU-aaaa") == 5 * GiB and held.on("GPU-bbbb") == 0
        [entry] = _entries(tmp_path)
        assert _entry(entry)["pid"] == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)  # no release: the kernel drops the entry's flock with the process
        holder.wait()
    # A dead evaluation's entry counts for nothing, and its reader removes it and says so.
    held = memory_ledger.held_by_others(settings)
    assert held.host_bytes == 0 and held.on("GPU-aaaa") == 0 and not held.holders
    assert _entries(tmp_path) == []
    assert f"memory ledger: removed 1 entry of evaluations that are gone: {entry.name}" in capfd.readouterr().err


def test_the_runners_start_up_cleanup_drops_a_dead_evaluations_reservation(tmp_path, monkeypatch, caplog):
    holder = _holder(tmp_path, "cpu", GiB, 0, 60)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    monkeypatch.setenv("KERNELHUB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELHUB_WORK_DIR", str(tmp_path / "work"))
    with caplog.at_level(logging.INFO, logger="gpu_runner.worker"):
        swept = worker.startup_cleanup()  # what `serve` runs before its workers start
    assert [r["pid"] for r in swept["reservations"]] == [holder.pid]
    assert swept["reservations"][0]["host_bytes"] == GiB and _entries(tmp_path) == []
    assert "1 memory reservations of dead evaluations dropped" in caplog.text


def test_it_waits_while_the_others_hold_what_it_needs(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "GPU-aaaa", 0, 40 * GiB, 1.5)
    seen = []

    def attempt(others: memory_ledger.Held) -> tuple[bool, int, int]:
        seen.append(others.on("GPU-aaaa"))
        # 60 GiB free on the device, 30 needed: not beside the other's 40.
        return 60 * GiB - others.on("GPU-aaaa") >= 30 * GiB, GiB, 30 * GiB

    r = memory_ledger.reserve("GPU-aaaa", attempt, timeout_s=60, label="test waiter", settings=settings)
    try:
        holder.wait()
        assert seen[0] == 40 * GiB and seen[-1] == 0, seen
        assert r.waited_s >= 0.5, r
        record = r.record()
        assert record["device_bytes"] == 30 * GiB and record["others"] == 0
        assert record["waited_for"] == [{"pid": holder.pid, "label": "test holder", "host_bytes": 0,
                                         "device_bytes": 40 * GiB}]
        # The entry says what the plan holds now, to the others.
        assert r.replan(lambda grown: (True, 2 * GiB, 20 * GiB), timeout_s=5)
        [entry] = _entries(tmp_path)
        assert _entry(entry)["device_bytes"] == 20 * GiB
    finally:
        r.release()
    assert _entries(tmp_path) == []
    r.release()  # twice is harmless


def test_it_does_not_wait_when_nobody_holds_what_it_lacks(tmp_path):
    # The memory went to something outside the ledger since the plan alone: nothing to wait for.
    started = time.monotonic()
    assert memory_ledger.reserve("cpu", lambda others: (False, GiB, 0), timeout_s=60,
                                 settings=RunnerConfig(cache_dir=tmp_path)) is None
    assert time.monotonic() - started < 5 and _entries(tmp_path) == []


def test_it_names_the_holders_when_it_gives_up(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "cpu", 6 * GiB, 0, 60)
    try:
        with pytest.raises(memory_ledger.MemoryWaitTimeout) as caught:
            memory_ledger.reserve("cpu", lambda others: (others.host_bytes <= 0, GiB, 0), timeout_s=1,
                                  settings=settings)
    finally:
        holder.kill()
        holder.wait()
    message = str(caught.value)
    assert f"pid {holder.pid} (test holder, host 6.0 GiB" in message, message
    assert "this evaluation fits alone" in message and "KERNELHUB_GPU_LOCK_TIMEOUT_S" in message, message


def test_a_grown_plan_counts_what_came_since_and_waits_for_a_later_evaluation(tmp_path):
    """The timing plan (from the measured footprint) may need more than the first plan reserved: it is made
    against what the others reserved since, and where it fits only without an evaluation that started later, it
    waits for that one to end."""
    settings = RunnerConfig(cache_dir=tmp_path)
    mine = memory_ledger.reserve("GPU-aaaa", lambda others: (True, GiB, 10 * GiB), timeout_s=5, settings=settings)
    holder = _holder(tmp_path, "GPU-aaaa", 0, 40 * GiB, 1.5)  # reserved after this one
    seen = []

    def attempt(grown: memory_ledger.Held) -> tuple[bool, int, int]:
        seen.append(grown.on("GPU-aaaa"))
        # 60 GiB were free beside the others when this one reserved; the timing plan needs 30.
        return 60 * GiB - grown.on("GPU-aaaa") >= 30 * GiB, 2 * GiB, 30 * GiB

    try:
        assert mine.replan(attempt, timeout_s=60)
        holder.wait()
        assert seen[0] == 40 * GiB and seen[-1] == 0, seen
        replanned = mine.record()["replanned"]
        assert [h["pid"] for h in replanned["waited_for"]] == [holder.pid] and replanned["waited_s"] >= 0.5
        assert replanned["grown_device_bytes"] == 0  # at the end, once the other had gone
        [entry] = _entries(tmp_path)
        assert _entry(entry)["device_bytes"] == 30 * GiB
        # Less than reserved: it fits at once and the entry shrinks.
        assert mine.replan(lambda grown: (True, GiB, 5 * GiB), timeout_s=60)
        assert _entry(entry)["device_bytes"] == 5 * GiB
    finally:
        holder.kill()
        holder.wait()
        mine.release()
    assert _entries(tmp_path) == []


def _rewrite_entry(cache: Path, pid: int, **fields) -> None:
    """An entry as its own evaluation would have rewritten it (its plan grown, or waiting in a replan)."""
    [path] = [p for p in _entries(cache) if _entry(p)["pid"] == pid]
    with memory_ledger._ledger_locked(path.parent):
        path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def test_a_grown_plan_waits_for_an_earlier_evaluation_that_grew_and_counts_only_its_growth(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "cpu", 2 * GiB, 0, 1.5)  # reserved before this one
    mine = memory_ledger.reserve("cpu", lambda others: (True, GiB, 0), timeout_s=5, settings=settings)
    _rewrite_entry(tmp_path, holder.pid, host_bytes=8 * GiB)  # its own timing plan took 6 GiB more since
    seen = []

    def attempt(grown: memory_ledger.Held) -> tuple[bool, int, int]:
        seen.append(grown.host_bytes)
        return grown.host_bytes == 0, 3 * GiB, 0

    try:
        assert mine.replan(attempt, timeout_s=60)
        holder.wait()
        assert seen[0] == 6 * GiB and seen[-1] == 0, seen  # what it added since, not what it held before
        assert mine.record()["host_bytes"] == 3 * GiB
        assert [h["pid"] for h in mine.record()["replanned"]["waited_for"]] == [holder.pid]
    finally:
        holder.kill()
        holder.wait()
        mine.release()


def test_a_grown_plan_is_refused_at_once_beside_an_earlier_evaluation_that_waits_in_its_own_replan(tmp_path):
    """Two replans never wait for each other: the earlier waits for the later, not the other way round."""
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "cpu", 2 * GiB, 0, 60)
    mine = memory_ledger.reserve("cpu", lambda others: (True, GiB, 0), timeout_s=5, settings=settings)
    _rewrite_entry(tmp_path, holder.pid, replanning=True, wants_host_bytes=8 * GiB)
    seen = []

    def attempt(grown: memory_ledger.Held) -> tuple[bool, int, int]:
        seen.append(grown.host_bytes)
        return grown.host_bytes == 0, 3 * GiB, 0

    try:
        started = time.monotonic()
        assert mine.replan(attempt, timeout_s=60) is False
        assert time.monotonic() - started < 5
        # What it wants counts; the last plan, for the refusal's figures, is the one beside it.
        assert seen[0] == 6 * GiB and seen[-1] == 6 * GiB, seen
        assert mine.record()["host_bytes"] == GiB and "replanning" not in _entry(mine.path)
    finally:
        holder.kill()
        holder.wait()
        mine.release()


def test_a_grown_plan_waits_for_an_evaluation_that_held_memory_when_it_reserved(tmp_path):
    """The timing plan of an evaluation that reserved while another held most of the GPU (a plan from the shapes
    holds 90% until its trials) may need more than it was counted as free then, though the GPU holds it easily
    alone. It waits for that one to end and then fits, from the GPU as it is then; before, the other, which had
    not grown since, was not waited for, and the plan was refused (2026-12-07 08:06, an H100 with three jobs: a
    5.3 GiB plan refused as "4.7 GiB is free" on an 80 GiB GPU)."""
    settings = RunnerConfig(cache_dir=tmp_path)
    total = 80 * GiB
    holder = _holder(tmp_path, "GPU-aaaa", 0, 70 * GiB, 1.5)  # reserved before this one, never grows
    mine = memory_ledger.reserve("GPU-aaaa", lambda others: (True, 0, 5 * GiB), timeout_s=5, settings=settings)
    seen = []

    def attempt(grown: memory_ledger.Held) -> tuple[bool, int, int]:
        # As reference._gpu_free_now counts it from the ledger: the whole GPU less what the others hold now.
        counted = total - grown.held_now.get("GPU-aaaa", 0)
        seen.append((grown.whole_device, counted // GiB))
        return counted >= 30 * GiB, 0, 30 * GiB

    try:
        assert mine.replan(attempt, timeout_s=60)
        holder.wait()
        assert seen[0] == (False, 10) and (True, 80) in seen and seen[-1] == (False, 80), seen
        replanned = mine.record()["replanned"]
        assert [h["pid"] for h in replanned["waited_for"]] == [holder.pid] and replanned["waited_s"] >= 0.5
        assert mine.record()["device_bytes"] == 30 * GiB
    finally:
        holder.kill()
        holder.wait()
        mine.release()


def test_a_grown_plan_that_the_whole_gpu_would_not_hold_is_refused_at_once(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "GPU-aaaa", 0, 70 * GiB, 60)
    mine = memory_ledger.reserve("GPU-aaaa", lambda others: (True, 0, 5 * GiB), timeout_s=5, settings=settings)
    seen = []

    def attempt(grown: memory_ledger.Held) -> tuple[bool, int, int]:
        counted = 80 * GiB - grown.held_now.get("GPU-aaaa", 0)
        seen.append((grown.whole_device, counted // GiB))
        return counted >= 90 * GiB, 0, 90 * GiB

    try:
        started = time.monotonic()
        assert mine.replan(attempt, timeout_s=60) is False
        assert time.monotonic() - started < 5
        # Asked once beside the other, once without it, and last beside it again, for the refusal's figures.
        assert seen == [(False, 10), (True, 80), (False, 10)], seen
        assert mine.record()["device_bytes"] == 5 * GiB
    finally:
        holder.kill()
        holder.wait()
        mine.release()


def test_a_waiting_replan_says_what_it_wants_and_gives_up_when_its_evaluation_ends(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    mine = memory_ledger.reserve("GPU-aaaa", lambda others: (True, GiB, 10 * GiB), timeout_s=5, settings=settings)
    holder = _holder(tmp_path, "GPU-aaaa", 0, 40 * GiB, 60)  # later, and long
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def replan() -> None:
        try:
            mine.replan(lambda grown: (grown.on("GPU-aaaa") == 0, GiB, 30 * GiB), timeout_s=60, cancel=cancel)
        except BaseException as e:  # noqa: BLE001 - the test reads it
            outcome.append(e)

    thread = threading.Thread(target=replan)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _entry(mine.path).get("replanning"):
            time.sleep(0.05)
        entry = _entry(mine.path)
        assert entry["replanning"] and entry["wants_device_bytes"] == 30 * GiB and entry["device_bytes"] == 10 * GiB
        # An evaluation that plans meanwhile counts what the waiting one wants, not what it holds: none starves it.
        held = memory_ledger.held_by_others(settings)
        assert held.on("GPU-aaaa") == 40 * GiB + 30 * GiB, held
        cancel.set()  # its evaluation's cleanup
        thread.join(timeout=5)
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], memory_ledger.MemoryWaitCancelled), outcome
        entry = _entry(mine.path)
        assert "replanning" not in entry and entry["device_bytes"] == 10 * GiB
    finally:
        cancel.set()
        holder.kill()
        holder.wait()
        mine.release()


NO_FOOTPRINT_PROBLEM = PROBLEM.replace(
    "    return [torch.randn(128, 1024)]",
    "    x = torch.randn(128, 1024)\n"
    "    if not bool(torch.isfinite(x).all()):  # a value read: nothing the meta device can work out\n"
    "        raise ValueError('non-finite input')\n"
    "    return [x]")


def test_a_problem_without_a_footprint_before_its_trials_reserves_at_its_timing_plan():
    assert NO_FOOTPRINT_PROBLEM != PROBLEM
    result = evaluate(NO_FOOTPRINT_PROBLEM, HONEST, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    plan = result["checks"]["memory_plan"]
    assert str(plan["before_trials"]).startswith("no footprint:"), plan
    assert plan["timing"]["fits"] and plan["reservation"]["host_bytes"] > 0, plan


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_evaluations_that_fit_one_at_a_time_run_one_after_the_other(tmp_path):
    """The small problem's plan needs about 1.1 GiB of host memory (two children's resident sets); with 1.5 GiB
    counted as free, one fits and two do not: the second waits for the first, and both are accepted."""
    results = evaluations_at_once(
        tmp_path, HONEST, stagger_s=0.5, timeout=850,
        env={"KERNELHUB_CACHE_DIR": str(tmp_path / "cache"), "KERNELHUB_HOST_MEMORY_GB": "1.5"})
    for r in results:
        assert r["verdict"] == "accepted", r["message"]
    first, second = sorted(results, key=lambda r: r["checks"]["memory_plan"]["reservation"]["waited_s"])
    plan = second["checks"]["memory_plan"]
    assert 1.5 * GiB * 0.9 >= plan["reservation"]["host_bytes"] > 0.75 * GiB * 0.9, plan["reservation"]
    assert plan["reservation"]["waited_s"] > 1 and len(plan["reservation"]["waited_for"]) == 1, plan
    assert first["checks"]["memory_plan"]["reservation"]["waited_for"] == []
    # Everything the second did on the device after its plan came after the first's last hold.
    first_end = max(h["held_until"] for h in first["checks"]["device_lock"])
    later = [h for h in second["checks"]["device_lock"] if h["phase"] != "reference load"]
    assert later and min(h["held_from"] for h in later) >= first_end, (first["checks"]["device_lock"], later)
    assert _entries(tmp_path / "cache") == []


def test_it_waits_for_an_evaluation_whose_allocations_already_lower_the_free_memory(tmp_path):
    """The free memory a plan reads already lacks what the others allocated. An evaluation that needs 47 GiB
    beside one that holds (and has allocated) 40 of 80 reads 40 free: it fits once the other ends, so it waits,
    where it used to be refused at once as if it could never fit (an H100, 2026-12-06: two test evaluations at
    once, "it needs 47.0 GiB of GPU memory, 47.9 GiB is free")."""
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "GPU-aaaa", 0, 40 * GiB, 1.5)
    seen = []

    def attempt(others: memory_ledger.Held) -> tuple[bool, int, int]:
        free = 80 * GiB - 40 * GiB * len(_entries(tmp_path))  # what the device reports free: the holder's allocated
        seen.append(others.on("GPU-aaaa"))
        return free - others.on("GPU-aaaa") >= 47 * GiB, GiB, 47 * GiB

    r = memory_ledger.reserve("GPU-aaaa", attempt, timeout_s=60, label="test waiter", settings=settings)
    try:
        assert r is not None, f"refused though it fits once the other evaluation ends: {seen}"
        holder.wait()
        assert seen[0] == 40 * GiB and -40 * GiB in seen and seen[-1] == 0, seen
        assert r.waited_s >= 0.5 and r.record()["waited_for"][0]["pid"] == holder.pid, r.record()
    finally:
        r is not None and r.release()


def test_it_is_refused_at_once_when_it_would_not_fit_even_once_the_others_end(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    with _held(tmp_path, "GPU-aaaa", 0, 40 * GiB):
        started = time.monotonic()
        # 80 GiB in all, 90 needed: never, whoever ends.
        r = memory_ledger.reserve("GPU-aaaa", lambda others: (40 * GiB - others.on("GPU-aaaa") >= 90 * GiB, GiB,
                                                              90 * GiB), timeout_s=60, settings=settings)
        assert r is None and time.monotonic() - started < 5


def _device_attempt(tmp_path: Path, need: int, used_by_holder: int, seen: list) -> Any:
    """A plan's attempt as the evaluator makes it (reference._free_beside), on an 80 GiB GPU on which the holder's
    processes use `used_by_holder` while its entry lives, whatever it reserved."""
    from gpu_runner.reference import _free_beside

    def attempt(others: memory_ledger.Held) -> tuple[bool, int, int]:
        gpu = {"free": 80 * GiB - used_by_holder * len(_entries(tmp_path)), "total": 80 * GiB}
        counted = _free_beside(gpu, others, "GPU-aaaa")
        seen.append((others.whole_device, counted["free"]))
        return counted["free"] >= need, GiB, need

    return attempt


def test_it_waits_for_an_evaluation_that_holds_more_than_it_reserved(tmp_path):
    """What another evaluation on the same GPU holds can exceed what it reserved: its processes' CUDA contexts and
    caching allocators, an evaluator's own cache of compared outputs. An H100, 2026-12-06, three jobs at once on
    KernelBench's cumsum problems (plans of 55-58 GiB of 80): four refused with runtime_error, all four accepted
    one at a time. Beside an evaluation that reserved 10 GiB and holds 50, one that needs 47 reads 30 free, 40
    with the reservation given back: it fits the whole GPU, so it waits, and runs once the other ends."""
    settings = RunnerConfig(cache_dir=tmp_path)
    holder = _holder(tmp_path, "GPU-aaaa", 0, 10 * GiB, 1.5)
    seen: list = []
    r = memory_ledger.reserve("GPU-aaaa", _device_attempt(tmp_path, 47 * GiB, 50 * GiB, seen), timeout_s=60,
                              label="test waiter", settings=settings)
    try:
        assert r is not None, f"refused though it fits once the other evaluation ends: {seen}"
        holder.wait()
        assert (True, 80 * GiB) in seen and seen[-1] == (False, 80 * GiB), seen
        assert r.waited_s >= 0.5 and r.record()["waited_for"][0]["pid"] == holder.pid, r.record()
    finally:
        r is not None and r.release()


def test_beside_an_evaluation_on_the_same_gpu_it_is_refused_at_once_only_past_the_whole_gpu(tmp_path):
    settings = RunnerConfig(cache_dir=tmp_path)
    with _held(tmp_path, "GPU-aaaa", 0, 10 * GiB):
        started, seen = time.monotonic(), []
        r = memory_ledger.reserve("GPU-aaaa", _device_attempt(tmp_path, 81 * GiB, 50 * GiB, seen), timeout_s=60,
                                  settings=settings)
        assert r is None and time.monotonic() - started < 5, seen
        assert seen[-1] == (True, 80 * GiB), seen  # the refusal's figures: the whole GPU counted as free


def test_an_evaluation_on_another_gpu_is_not_waited_for_past_what_it_reserved(tmp_path):
    """The holder's entry names another GPU: what this one lacks is in no entry of the ledger, so nothing is waited
    for and the whole-GPU count (for evaluations that share this GPU) is never asked."""
    settings = RunnerConfig(cache_dir=tmp_path)
    with _held(tmp_path, "GPU-bbbb", 0, 10 * GiB):
        seen: list = []
        r = memory_ledger.reserve("GPU-aaaa", _device_attempt(tmp_path, 47 * GiB, 50 * GiB, seen), timeout_s=60,
                                  settings=settings)
        assert r is None and all(whole is False for whole, _ in seen), seen


def test_a_plan_from_the_shapes_holds_the_gpus_free_memory_until_its_trials_measure_the_footprint(tmp_path):
    """The first evaluation of a problem on a device model plans from the shapes (no temporaries): it reserves all
    the GPU memory it counts as free (reference.device_to_reserve), so that nothing planned beside it can run it out
    of memory in its trials; its timing plan, from the measured footprint, gives the rest back (replan), and an
    evaluation that waited for it then fits beside it."""
    from gpu_runner.reference import device_to_reserve

    assert device_to_reserve("cuda", "meta", 20 * GiB, 70 * GiB) == int(0.9 * 70 * GiB)
    assert device_to_reserve("cuda", "meta", 68 * GiB, 70 * GiB) == 68 * GiB
    for device, source in [("cuda", "cached"), ("cuda", "measured"), ("cpu", "meta")]:
        assert device_to_reserve(device, source, 20 * GiB, 70 * GiB) == 20 * GiB
    assert device_to_reserve("cuda", "meta", 20 * GiB, None) == 20 * GiB

    settings = RunnerConfig(cache_dir=tmp_path)
    total = 80 * GiB
    first = memory_ledger.reserve("GPU-aaaa", lambda others: (True, 0, device_to_reserve(
        "cuda", "meta", 20 * GiB, total - others.on("GPU-aaaa"))), timeout_s=5, settings=settings)
    assert first is not None and first.device_bytes == int(0.9 * total)
    second_fits = []

    def second(others: memory_ledger.Held) -> tuple[bool, int, int]:
        counted = total if others.whole_device else total - others.on("GPU-aaaa")
        second_fits.append(counted >= 30 * GiB)
        return second_fits[-1], 0, 30 * GiB

    reserved: list = []
    waiter = threading.Thread(target=lambda: reserved.append(memory_ledger.reserve(
        "GPU-aaaa", second, timeout_s=30, settings=settings)))
    waiter.start()
    try:
        time.sleep(1.0)
        assert not reserved and second_fits and not second_fits[0], second_fits  # waiting beside the whole hold
        # The first's trials measured 25 GiB: its timing plan reserves that and gives the rest back.
        assert first.replan(lambda grown: (True, 0, 25 * GiB), timeout_s=5)
        waiter.join(timeout=20)
        assert reserved and reserved[0] is not None and reserved[0].device_bytes == 30 * GiB, second_fits
        assert first.device_bytes == 25 * GiB
    finally:
        waiter.join(timeout=20)
        first.release()
        for r in reserved:
            r is not None and r.release()
