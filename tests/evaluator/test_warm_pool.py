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
from tests.evaluator.helpers import HONEST, PROBLEM


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
