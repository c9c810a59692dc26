"""Drain and resume against a real Celery worker of gpu_runner, named as `serve` names it, on the test run's
broker: the staff dashboard's drain cancels its consumer of pool.cpu (inspect().active_queues() shows it gone,
and a job sent meanwhile waits in the queue); resume adds it back and the job is taken."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from apps.devices.control import queue_depth
from kernelhub.celery import app
from tests.conftest import REPO_ROOT
from tests.devices.helpers import wait_for

WORKER = f"cpu-1-cpu0@{socket.gethostname()}"


def _queues() -> list[str] | None:
    replies = app.control.inspect(destination=[WORKER], timeout=3).active_queues() or {}
    if WORKER not in replies:
        return None
    return sorted(q["name"] for q in replies[WORKER])


@pytest.fixture
def worker(embedded_redis, redis_queue, settings, tmp_path):
    # redis_queue empties pool.cpu first: a job an earlier test left there would be the worker's first, and it
    # would spend the test retrying its claim against a site that is not there.
    env = dict(os.environ, KERNELHUB_BROKER_URL=settings.CELERY_BROKER_URL, KERNELHUB_SITE_URL="http://127.0.0.1:9",
               KERNELHUB_RUNNER_TOKEN="khr_unused", PYTHONUNBUFFERED="1")
    env.pop("KERNELHUB_WORKER_LABEL", None)
    log = open(tmp_path / "worker.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "gpu_runner.worker", "worker", "-Q", "pool.cpu", "-c", "1",
         "-P", "prefork", "--prefetch-multiplier", "1", "--without-gossip", "--without-mingle",
         "-n", "cpu-1-cpu0@%h", "-l", "info"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for("the worker to answer", lambda: process.poll() is not None or _queues() == ["pool.cpu"], 120)
        assert process.poll() is None, (tmp_path / "worker.log").read_text()
        yield process
    finally:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_it_drains_and_resumes_a_real_worker(transactional_db, worker, runners, redis_queue, client, sam):
    client.force_login(sam)
    client.post("/staff/runners/cpu-1/drain/", {"reason": "driver update"})
    assert _queues() == []
    from apps.devices.models import AuditLog

    assert f"cancel_consumer sent to {WORKER}" in AuditLog.objects.get(action="drain").detail

    # A job sent while drained waits: the worker does not take it. (A malformed job: the worker drops it
    # without calling the site, so this test needs none.)
    app.send_task("gpu_runner.evaluate_job", kwargs={"job": {}}, queue="pool.cpu")
    time.sleep(5)
    assert queue_depth("pool.cpu") == 1

    client.post("/staff/runners/cpu-1/resume/")
    assert _queues() == ["pool.cpu"]
    assert f"add_consumer sent to {WORKER}" in AuditLog.objects.get(action="resume").detail
    wait_for("the waiting job to be taken", lambda: queue_depth("pool.cpu") == 0, 60)


def test_it_leaves_other_runners_workers_alone(transactional_db, worker, runners, client, sam):
    client.force_login(sam)
    client.post("/staff/runners/cpu-2/drain/", {"reason": "not this one"})
    assert _queues() == ["pool.cpu"]
