"""`python -m gpu_runner serve` against the live site: it says which worker got which device, calibrates it
before the worker starts (the measurement reaches the site through the API), and a runner that is draining
starts its worker on a private queue, so it takes no job until it is resumed from the dashboard. Between jobs
the worker measures again (every KERNELHUB_CALIBRATE_EVERY_S), and serve applies a drain flag it reads in a
heartbeat answer even when the dashboard's broadcast never reached the worker."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.devices.helpers import wait_for

WORKER = f"serve-cpu-cpu0@{socket.gethostname()}"


def _queues() -> list[str] | None:
    from kernelhub.celery import app

    replies = app.control.inspect(destination=[WORKER], timeout=3).active_queues() or {}
    return sorted(q["name"] for q in replies[WORKER]) if WORKER in replies else None


@pytest.fixture
def drained_runner(live_asgi_server, embedded_redis):
    from apps.devices.services import pool_get_or_create, runner_create, runner_drain

    pool, _ = pool_get_or_create(slug="cpu")
    runner, secret = runner_create(name="serve-cpu", pool=pool)
    runner_drain(runner=runner, reason="not yet: new host")
    return runner, secret


@pytest.fixture
def serve(live_asgi_server, drained_runner, tmp_path):
    _runner, secret = drained_runner
    log_path = tmp_path / "serve.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "gpu_runner", "serve", "--site", live_asgi_server, "--token", secret,
         "--loglevel", "info", "--shutdown-grace", "5"],
        cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
        # Its own cache: the calibration must not touch the machine's ~/.cache/kernelhub.
        env=dict(os.environ, PYTHONUNBUFFERED="1", KERNELHUB_CALIBRATE_EVERY_S="1",
                 KERNELHUB_CACHE_DIR=str(tmp_path / "cache")))
    process.log_path = log_path  # type: ignore[attr-defined]
    yield process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


@pytest.mark.slow
def test_a_draining_runner_starts_idle_and_resumes(serve, drained_runner, client):
    from django.contrib.auth import get_user_model

    from apps.devices.models import Calibration

    runner, _secret = drained_runner
    wait_for("the worker to answer", lambda: serve.poll() is not None or _queues() is not None, 240)
    log = serve.log_path.read_text()
    assert serve.poll() is None, log
    assert f"worker {WORKER} -> the CPU (no GPU visible), CUDA_VISIBLE_DEVICES=''" in log
    assert _queues() == ["runner.serve-cpu"]  # not pool.cpu: it takes no job

    calibration = Calibration.objects.get(runner=runner)
    assert calibration.worker == "cpu0" and calibration.copy_bandwidth_gbps > 0
    assert calibration.matmul_fp32_tflops > 0 and calibration.matmul_bf16_tflops is None
    assert "calibration cpu0: copy" in log

    staff = get_user_model().objects.create_user(username="sam", password="a-long-password-1", is_staff=True)
    client.force_login(staff)
    client.post("/staff/runners/serve-cpu/resume/")
    assert _queues() == ["pool.cpu", "runner.serve-cpu"]

    # A job (malformed: the worker drops it without a claim); after it, the worker calibrates again.
    from kernelhub.celery import app

    app.send_task("gpu_runner.evaluate_job", kwargs={"job": {}}, queue="pool.cpu")
    try:
        wait_for("the calibration between jobs", lambda: Calibration.objects.filter(runner=runner).count() == 2, 120)
    except AssertionError as e:
        raise AssertionError(f"{e}; serve's log:\n{serve.log_path.read_text()[-4000:]}") from None

    client.post("/staff/runners/serve-cpu/drain/", {"reason": "again"})
    assert _queues() == ["runner.serve-cpu"]
    client.post("/staff/runners/serve-cpu/resume/")
    assert _queues() == ["pool.cpu", "runner.serve-cpu"]

    # The flag set without a broadcast (as if the worker was restarting when it went out): serve reads it in
    # its next heartbeat answer and stops its own workers' consumer.
    from apps.devices.models import Runner

    Runner.objects.filter(pk=runner.pk).update(is_draining=True, drain_reason="set while the worker restarted")
    wait_for("serve to apply the drain flag", lambda: _queues() == ["runner.serve-cpu"], 90)
