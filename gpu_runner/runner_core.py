"""What every runner does with one job, whatever evaluates it: check the job, claim it, keep the site told of its
stage, evaluate, then report the result or hand the job back. The GPU runner (gpu_runner.worker) and the Mac
runner (ane_runner.worker) differ only in the evaluation they pass to run_job.

Outcomes (run_job's return value): "refused" (malformed, or the site would not let this runner claim it: a stale
message), "done" (result accepted), "lost" (the site took the job back meanwhile, or refused the result),
"gave_up" (the evaluator itself failed: the job was handed back to be tried elsewhere).
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import traceback
from collections.abc import Callable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from gpu_runner.contract import ContractError, Job
from gpu_runner.site_client import SiteClient, SiteError, SiteRefused

logger = logging.getLogger("gpu_runner.runner_core")

Evaluate = Callable[[Job, Callable[[str], None]], dict[str, Any]]


def json_safe(value: Any) -> Any:
    """NaN and infinities become null: the site's strict JSON parser refuses them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def timeout_result(message: str) -> dict[str, Any]:
    return {"verdict": "timeout", "correct": False, "runtime_us": None, "eager_us": None, "compile_us": None,
            "speedup_vs_eager": None, "speedup_vs_compile": None, "message": message}


class KeepAlive(threading.Thread):
    """Re-posts the current stage every few seconds: a long build or timing run is not silence."""

    def __init__(self, client: SiteClient, evaluation_id: int, job_token: str, every_s: float) -> None:
        super().__init__(daemon=True, name=f"keepalive-{evaluation_id}")
        self.client, self.evaluation_id, self.job_token, self.every_s = client, evaluation_id, job_token, every_s
        self.stage = ""
        self.lost = False  # the site took the job back: its result would be refused
        self.stopped = threading.Event()

    def report(self, stage: str) -> None:
        self.stage = stage
        self._post()

    def _post(self) -> None:
        if not self.stage or self.lost:
            return
        try:
            self.client.stage(self.evaluation_id, self.job_token, self.stage)
        except SiteRefused as e:
            if e.status == 400:  # a stage this site does not know yet (an older site): not a lost job
                logger.warning("The site refused stage %r of job %s: %s", self.stage, self.evaluation_id, e.message)
                return
            self.lost = True
            logger.warning("Job %s was taken back by the site: %s", self.evaluation_id, e.message)
        except SiteError as e:
            logger.warning("Could not report stage of job %s: %s", self.evaluation_id, e)

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            self._post()


def run_job(client: SiteClient, job: dict[str, Any], evaluate: Evaluate, *, keepalive_s: float = 30.0,
            timeout_message: str, failure_label: str, check: Callable[[Job], None] | None = None,
            log: logging.Logger = logger, job_kind: str = "job") -> str:
    """Claim, evaluate, report; returns the outcome (see the module's docstring).

    evaluate(job, report_stage) returns the result object; check(job) may raise ContractError for a job this
    runner cannot take (it is dropped, "refused"). timeout_message is the result's message when Celery's soft
    time limit stops the evaluation; failure_label opens the message a job handed back carries ("evaluator error",
    "ANE runner error"). log and job_kind: the runner's logger, and what it calls its jobs in the log ("ANE job")."""
    try:
        checked = Job.from_json(job)
        if check is not None:
            check(checked)
    except ContractError as e:
        log.error("Dropping a malformed %s: %s", job_kind, e)
        return "refused"
    evaluation_id, token = checked.evaluation_id, checked.job_token
    try:
        client.claim(evaluation_id, token)
    except SiteRefused as e:
        # The normal fate of a stale message: the job was re-queued with a new token, or is finished.
        log.info("Job %s not claimed: %s", evaluation_id, e.message)
        return "refused"
    keepalive = KeepAlive(client, evaluation_id, token, keepalive_s)
    keepalive.start()
    try:
        result = evaluate(checked, keepalive.report)
    except SoftTimeLimitExceeded:
        result = timeout_result(timeout_message)
    except Exception as e:  # noqa: BLE001 - the evaluator failed, not the solution: hand the job back
        log.exception("The evaluation of job %s failed", evaluation_id)
        keepalive.stopped.set()
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        try:
            client.fail(evaluation_id, token, f"{failure_label} on {socket.gethostname()}: {detail}")
        except SiteError as refused:
            log.warning("Could not hand job %s back: %s", evaluation_id, refused)
        return "gave_up"
    finally:
        keepalive.stopped.set()
    if keepalive.lost:
        return "lost"
    try:
        client.result(evaluation_id, token, json_safe(result))
    except SiteRefused as e:
        log.warning("Result of job %s refused: %s", evaluation_id, e.message)
        return "lost"
    log.info("Job %s done: %s", evaluation_id, result.get("verdict"))
    return "done"
