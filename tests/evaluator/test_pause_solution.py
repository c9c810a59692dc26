"""The solution's process stopped outside its requests (KERNELHUB_PAUSE_SOLUTION, context.solution_turn): where
a GPU's worker takes several jobs, nothing of one solution may run while another evaluation times on that GPU.
A stopped child answers nothing until it is continued; each of its requests runs under the device lock; two
evaluations at once, both pausing their solutions, are accepted and never overlap a timed phase of the other."""

import time
from pathlib import Path

import psutil
import pytest
import torch

from gpu_runner import config
from gpu_runner.protocol import ChannelTimeout
from gpu_runner.session import Session, limits
from tests.evaluator.helpers import FIXTURES, HONEST, assert_no_timed_overlap, evaluations_at_once

REPO_ROOT = Path(__file__).resolve().parents[2]


def _states(pid: int) -> set[str]:
    """The state letter of every thread of the process and of its descendants."""
    found = set()
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    for p in procs:
        for task in Path(f"/proc/{p.pid}/task").iterdir():
            try:
                found.add((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
            except (OSError, IndexError):
                pass
    return found


def test_a_paused_child_answers_nothing_until_it_is_continued():
    s = Session("solution", device="cpu", limits_=limits("cpu"))
    try:
        assert s.request("ping")["ok"]
        s.pause()
        assert s.paused and s.pauses == 1
        deadline = time.monotonic() + 5
        while _states(s.child.proc.pid) != {"T"}:  # the signal is delivered a moment later
            assert time.monotonic() < deadline, _states(s.child.proc.pid)
            time.sleep(0.02)
        s.child.channel.send({"op": "ping"})
        with pytest.raises(ChannelTimeout):
            s.child.channel.recv(deadline=time.monotonic() + 1.0)
        s.resume()
        assert not s.paused
        assert s.child.channel.recv(deadline=time.monotonic() + 30)["ok"]  # the ping sent while it was stopped
        assert "T" not in _states(s.child.proc.pid)
    finally:
        s.close()


def test_it_is_on_by_default_only_where_a_gpu_takes_several_jobs():
    assert not config.RunnerConfig().pauses_solution("cuda")
    assert config.RunnerConfig(gpu_jobs=2).pauses_solution("cuda")
    assert not config.RunnerConfig(gpu_jobs=2).pauses_solution("cpu")
    assert config.RunnerConfig(pause_solution="1").pauses_solution("cpu")
    assert not config.RunnerConfig(gpu_jobs=2, pause_solution="0").pauses_solution("cuda")
    with pytest.raises(config.ConfigError, match="KERNELHUB_PAUSE_SOLUTION='sometimes': use auto"):
        config.RunnerConfig.from_env({"KERNELHUB_PAUSE_SOLUTION": "sometimes"})


ON_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


@pytest.mark.slow
@pytest.mark.parametrize("device, solution", [
    pytest.param("cpu", HONEST, id="cpu"),
    pytest.param("cuda", (FIXTURES / "relu_scale_cuda.py").read_text(), marks=ON_GPU, id="cuda"),
])
def test_two_evaluations_that_pause_their_solutions_are_accepted_and_keep_out_of_each_others_timing(
        tmp_path, device, solution):
    results = evaluations_at_once(tmp_path, solution, device=device, env={"KERNELHUB_PAUSE_SOLUTION": "1"})
    for r in results:
        assert r["verdict"] == "accepted", r["message"]
        # Stopped after its load, after each request outside the timed phase, and after that phase.
        assert r["checks"]["solution_paused"]["pauses"] >= 4, r["checks"]["solution_paused"]
        holds = r["checks"]["device_lock"]
        # Its requests outside the timed phase ran under the shared lock: the load (import and construction) too.
        phases = {h["phase"] for h in holds if h["shared"]}
        assert {"solution load", "solution prepare_timing"} <= phases, phases
    # No hold of one evaluation, the solution's requests included, overlaps a timed (exclusive) hold of the other.
    assert_no_timed_overlap(*results)
