"""Pre-started evaluation processes (gpu_runner/warm.py): each serves one submission, locked down before it
sees one, and the pool's cached reference outputs are used only for the same problem, seed and device."""

import subprocess
import sys

import psutil
import pytest
import torch

from gpu_runner import sandbox, warm
from gpu_runner.config import RunnerConfig
from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import FIXTURES, HONEST, PROBLEM


@pytest.fixture
def pool():
    p = warm.WarmPool("cpu")
    p.refill()
    yield p
    p.close()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_it_never_hands_a_prestarted_process_to_a_second_submission(pool):
    first = evaluate(PROBLEM, HONEST, device="cpu", seed=5, pool=pool)
    assert first["verdict"] == "accepted", first["message"]
    # (torch.compile's baseline child, when its baseline is not cached yet, starts cold.)
    assert first["checks"]["prestarted"]["eager"] is True and first["checks"]["prestarted"]["solution"] is True
    used = [pid for role, pid in pool.handed_out if role == "solution"]
    assert len(used) == 1 and _gone(used[0])  # killed with its submission

    pool.refill()
    second = evaluate(PROBLEM, HONEST, device="cpu", seed=5, pool=pool)
    assert second["verdict"] == "accepted", second["message"]
    assert second["checks"]["prestarted"]["eager"] is True and second["checks"]["prestarted"]["solution"] is True
    used = [pid for role, pid in pool.handed_out if role == "solution"]
    assert len(used) == 2 and used[0] != used[1] and _gone(used[1])
    # The second run's expected trial outputs came from the pool, not from the reference process.
    assert first["checks"]["reference_trials_cached"] is False
    assert second["checks"]["reference_trials_cached"] is True
    assert "reference_trials" not in second["stage_seconds"]
    assert {"solution_load", "trials", "timing", "baselines"} <= set(second["stage_seconds"])


def test_a_new_seed_does_not_use_the_cached_reference_outputs(pool):
    evaluate(PROBLEM, HONEST, device="cpu", seed=6, pool=pool)
    pool.refill()
    other = evaluate(PROBLEM, HONEST, device="cpu", seed=7, pool=pool)
    assert other["verdict"] == "accepted", other["message"]
    assert other["checks"]["reference_trials_cached"] is False


def test_a_prestarted_solution_process_is_locked_down_before_it_gets_the_source(pool):
    session = pool.take("solution")
    assert session is not None and session.prestarted
    assert pool.take("solution") is None  # handed out once
    try:
        session.begin(None)
        assert session.request("ping", timeout=600) == {"ok": True}  # torch imported, waiting for its job
        assert not (session.workdir / "solution.py").exists()
        assert not (session.workdir / "problem.py").exists()
        if not sandbox.unshare_works():
            pytest.skip("no namespaces on this host: the lockdown cannot be observed")
        observed = sandbox.observed_isolation(session.child)
        assert observed["own_mnt_namespace"] and observed["own_net_namespace"]
        assert observed["root_read_only"] is True
        assert observed["capabilities_dropped"] is True
    finally:
        pid = session.child.proc.pid
        session.close()
    assert _gone(pid)


def test_the_reference_cache_drops_the_least_recently_used_entry_over_its_budget():
    cache = warm.ReferenceCache(max_bytes=100)
    cache.put("a", {"v": 1}, 40)
    cache.put("b", {"v": 2}, 40)
    assert cache.get("a") == {"v": 1}  # now the most recently used
    cache.put("c", {"v": 3}, 40)
    assert cache.get("b") is None
    assert cache.get("a") == {"v": 1} and cache.get("c") == {"v": 3}
    cache.put("huge", {"v": 4}, 101)
    assert cache.get("huge") is None


def test_it_refuses_a_prestart_setting_it_does_not_understand():
    with pytest.raises(ValueError, match="KERNELHUB_PRESTART='maybe': use true or false"):
        RunnerConfig.from_env({"KERNELHUB_PRESTART": "maybe"})
    assert RunnerConfig.from_env({"KERNELHUB_PRESTART": "false"}).prestart is False


def test_a_pool_serves_only_its_device(pool):
    with pytest.raises(ValueError, match="serves device 'cpu', not 'cuda': use one pool per device"):
        evaluate(PROBLEM, HONEST, device="cuda", pool=pool)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
def test_a_solution_process_waiting_for_its_job_has_not_initialised_cuda():
    # What a pre-started solution child runs before its job: the harness's construction. CUDA must start only
    # in `load`, in the child itself.
    code = ("from gpu_runner.child import Harness; import torch; Harness(None, 'solution', {}); "
            "print('cuda initialised:', torch.cuda.is_initialized())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cuda initialised: False" in done.stdout


def test_settle_waits_for_the_spares_to_finish_starting_once(pool):
    spares = {role: s.child.proc.pid for role, s in pool.spares.items()}
    assert set(spares) == set(warm.ROLES)
    pool.settle(120.0)
    assert set(spares.values()) <= pool.settled  # each answered a ping: torch imported, waiting for its job
    again = pool.settle(120.0)
    assert again < 0.5  # nothing left to wait for
    # A spare that died while waiting is dropped (the next refill starts another), never waited for.
    dead = pool.spares["eager"]
    psutil.Process(sandbox._harness_pid(dead.child)).kill()  # the child's Python process (under unshare too)
    dead.child.proc.wait(timeout=30)
    pool.settled.discard(dead.child.proc.pid)
    pool.settle(30.0)
    assert "eager" not in pool.spares and "solution" in pool.spares
    pool.refill()
    assert pool.spares["eager"].child.proc.pid != spares["eager"]


@pytest.mark.slow
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
def test_on_a_gpu_the_next_jobs_processes_start_during_this_one_and_are_started_before_its_timing():
    gpu_pool = warm.WarmPool("cuda")
    gpu_pool.refill()
    try:
        first = {role: s.child.proc.pid for role, s in gpu_pool.spares.items()}
        # The CUDA solution of the same problem (HONEST is its C++ one: on CUDA tensors it reads device pointers on
        # the host, and its process dies of SIGSEGV in its first trial, as on the H100 on 2026-12-05).
        result = evaluate(PROBLEM, (FIXTURES / "relu_scale_cuda.py").read_text(), device="cuda", seed=5,
                          pool=gpu_pool)
        assert result["verdict"] == "accepted", result["message"]
        # The spares for the next job were started during this one, and had finished starting before its first
        # exclusive phase (the wait is on record, however short).
        assert "spares_settle" in result["stage_seconds"]
        nxt = {role: s.child.proc.pid for role, s in gpu_pool.spares.items()}
        assert set(nxt) == set(warm.ROLES) and not set(nxt.values()) & set(first.values())
        assert set(nxt.values()) <= gpu_pool.settled
    finally:
        gpu_pool.close()
