"""The Mac runner's Celery side: the same task name, payload and site protocol as gpu_runner's worker.

The site sends `gpu_runner.evaluate_job` (docs/ARCHITECTURE.md) to `pool.<chip>-ane`; this Celery app of
its own registers that name too, so a Mac consumes its pool's queue without the site treating it apart.
ANE jobs carry one more key, `ane` (ane_runner.jobs.ane_job_prepare). Claim, stages, keep-alive, result and
hand-back are gpu_runner.runner_core's, shared with the GPU runner.

Never run by this project: no Mac was available (docs/ANE.md).
"""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from celery import Celery

from gpu_runner import runner_core
from gpu_runner.config import RunnerConfig
from gpu_runner.contract import ContractError, Job
from gpu_runner.site_client import SiteClient, SiteError

logger = logging.getLogger("ane_runner.worker")

# This worker process's settings (gpu_runner/config.py), read once as Celery imports this module.
SETTINGS = RunnerConfig.from_env()
SOFT_TIME_LIMIT_S = SETTINGS.soft_time_limit_s

app = Celery("ane_runner")
app.conf.update(
    broker_url=SETTINGS.broker_url or None,
    broker_connection_retry_on_startup=True,
    broker_transport_options={"visibility_timeout": 3 * 3600},
    task_ignore_result=True,
    result_backend=None,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    worker_concurrency=1,  # one job at a time: the Neural Engine is one device, timings must not overlap
    task_soft_time_limit=SOFT_TIME_LIMIT_S,
    task_time_limit=SETTINGS.hard_time_limit_s(),
    worker_hijack_root_logger=False,
)


def run_ane_job(client: SiteClient, job: dict[str, Any], *, chip: str, keepalive_s: float = 30.0) -> str:
    """Claim, evaluate on this Mac, report (gpu_runner.runner_core.run_job). Returns refused, done, lost or
    gave_up."""

    def check(checked: Job) -> None:
        if checked.ane is None:
            raise ContractError("job lacks ane: an ANE job is prepared by the site first "
                                "(apps/submissions/ane.py) and carries its package and reference.")

    def evaluate_here(checked: Job, report: Callable[[str], None]) -> dict[str, Any]:
        from .evaluate_mac import evaluate_on_mac
        from .macos import CoreMLBackend

        assert checked.ane is not None  # check() refused the job otherwise
        return evaluate_on_mac(checked.ane, backend=CoreMLBackend(), chip=chip, on_stage=report)

    return runner_core.run_job(
        client, job, evaluate_here, keepalive_s=keepalive_s, check=check, failure_label="ANE runner error",
        log=logger, job_kind="ANE job",
        timeout_message=f"The evaluation took longer than this runner's limit of {SOFT_TIME_LIMIT_S} s.")


@app.task(name="gpu_runner.evaluate_job", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def evaluate_job(job: dict[str, Any]) -> str:
    client = SiteClient(SETTINGS.site_url, SETTINGS.runner_token)
    try:
        return run_ane_job(client, job, chip=SETTINGS.ane_chip, keepalive_s=SETTINGS.keepalive_s)
    finally:
        client.close()


def serve(*, site: str, token: str) -> int:
    """Ask the site who this runner is, then run one Celery worker on its pool's queue (foreground)."""
    if sys.platform != "darwin":
        print("error: `ane_runner serve` runs on a Mac with a Neural Engine (macOS 15 or later); "
              "on Linux use `python -m ane_runner validate`", file=sys.stderr)
        return 2
    client = SiteClient(site, token)
    try:
        me = client.me()
    except SiteError as e:
        print(f"error: the site did not accept this runner: {e}", file=sys.stderr)
        client.close()
        return 2
    if me.get("is_disabled"):
        print(f"error: runner {me.get('name')} is disabled on the site", file=sys.stderr)
        client.close()
        return 2
    queue, broker, pool = me.get("queue"), me.get("broker_url"), me.get("pool")
    if not queue or not broker or not str(queue).endswith("-ane"):
        print(f"error: the site says this runner belongs to {queue!r}; an ANE runner needs a `pool.<chip>-ane` "
              "queue (register it in an ANE pool)", file=sys.stderr)
        return 2
    env = dict(os.environ, KERNELHUB_SITE_URL=site, KERNELHUB_RUNNER_TOKEN=token, KERNELHUB_BROKER_URL=broker,
               KERNELHUB_ANE_CHIP=str(pool or queue).removeprefix("pool."))
    logger.info("Serving %s on %s (%s)", queue, platform.node(), platform.mac_ver()[0])
    argv = [sys.executable, "-m", "celery", "-A", "ane_runner.worker:app", "worker", "-Q", str(queue),
            "--concurrency", "1", "--prefetch-multiplier", "1", "--hostname", f"ane@{platform.node()}",
            "--loglevel", "INFO"]
    worker = subprocess.Popen(argv, env=env)
    host = {"hostname": platform.node(), "os": f"macOS {platform.mac_ver()[0]}", "machine": platform.machine(),
            "python": platform.python_version()}
    try:
        while True:
            try:
                return worker.wait(timeout=float(me.get("heartbeat_s") or 30))
            except subprocess.TimeoutExpired:
                pass
            try:
                client.heartbeat(host_info=host, telemetry={"worker": "running"})
            except SiteError as e:
                logger.warning("Heartbeat failed: %s", e)
    finally:
        if worker.poll() is None:
            worker.terminate()
            worker.wait(timeout=60)
        client.close()
