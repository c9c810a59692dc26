"""The life of an evaluation: the only code that writes `Evaluation.status`.

queued --dispatch--> (a job in its pool's queue, a fresh token) --claim--> running --stage...--> running
--finish--> done; a runner that gives up, falls silent or is disabled sends it back to queued (requeue, a new
token, attempt + 1) until JOB_MAX_ATTEMPTS, then failed. An ANE job is validated and converted on the site first
and is finished there (finish_on_site) when it needs no Mac, or forwarded to its Mac pool.

Every change is one conditional UPDATE whose filter names the state it leaves (and the job token and runner where
a runner asks for it); a count of 0 means someone else got there first, and the caller is refused. That is what
makes a job claimed once and finished once, whatever runners and the sweeper do. The callers: the submission
services (dispatch after a submission is created), the runners' job API, the ANE preparation task, the sweeper,
and the devices app (through its signals: a runner disabled, runners gone offline).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.devices import signals
from apps.devices.models import AuditLog, HardwarePool, Runner
from apps.devices.services import audit_record
from apps.submissions.events import publish_evaluation
from apps.submissions.models import Evaluation, token_hash
from gpu_runner.contract import PREBUILD_EXPIRES_S, PREBUILD_KEYS, PREBUILD_TASK, build_queue
from gpu_runner.contract import RUNNER_STAGES as JOB_STAGES

logger = logging.getLogger(__name__)

EVALUATE_TASK = "gpu_runner.evaluate_job"
PREPARE_ANE_TASK = "submissions.prepare_ane_job"


def dispatch_on_commit(evaluation: Evaluation, *, publish: bool = True) -> None:
    """A new evaluation's first dispatch, once the transaction that made it commits."""
    transaction.on_commit(lambda: evaluation_dispatch(evaluation_id=evaluation.pk, attempt=0, evaluation=evaluation,
                                                      publish=publish))


# --- Dispatch and the guarded transitions ------------------------------------------------------------

def evaluation_dispatch(*, evaluation_id: int, attempt: int, evaluation: Evaluation | None = None,
                        publish: bool = True) -> bool:
    """Sends a queued evaluation to its pool's queue with a fresh job token (attempt -> attempt + 1).

    The filter on `attempt` makes two dispatchers of the same attempt send one job between them. The token is
    only ever in the message: the row keeps its hash, so the database alone cannot write a result.
    `evaluation`: the row as submission_create made it, its submission's relations loaded; it is updated in
    memory along with the row (the API answers with it), which saves reading it back. `publish=False` skips the
    live event (a channel-layer round trip, 3-17 ms measured in-process).
    """
    from kernelhub.celery import app

    token = secrets.token_urlsafe(32)
    now = timezone.now()
    changes = {"job_token_hash": token_hash(token), "attempt": attempt + 1, "last_progress_at": now,
               "stage": "queued"}
    sent = Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.STATUS_QUEUED, attempt=attempt).update(
        **changes)
    if not sent:
        return False
    if evaluation is None:
        evaluation = Evaluation.objects.select_related("submission__problem_version", "submission__pool",
                                                       "submission__problem").get(pk=evaluation_id)
    else:
        for name, value in changes.items():
            setattr(evaluation, name, value)
    submission = evaluation.submission
    job = {
        "evaluation_id": evaluation.pk,
        "job_token": token,
        "attempt": evaluation.attempt,
        "problem_slug": submission.problem.slug,
        "problem_source": submission.problem_version.source,
        "solution_source": submission.source,
        "language": submission.language,
        "device": submission.pool.device,
        # Unpredictable: a solution must not be able to precompute the inputs of its own evaluation.
        "seed": secrets.randbelow(2**31),
    }
    task, queue = EVALUATE_TASK, submission.pool.queue
    if submission.pool.kind == HardwarePool.KIND_ANE:
        # Validated and converted on the site first (apps/submissions/ane.py), which then sends it on to the Mac
        # pool with its prepared `ane` entry, or stores the verdict of an ineligible graph at once.
        task, queue = PREPARE_ANE_TASK, settings.ANE_PREPARE_QUEUE
    try:
        app.send_task(task, kwargs={"job": job}, queue=queue)
    except Exception:
        # The broker is down: the row stays queued and the sweeper sends it again.
        logger.exception("Could not send evaluation %s to %s; the sweeper will retry.", evaluation_id,
                         submission.pool.queue)
        return False
    if submission.pool.device == "cuda":
        _send_build_hint(job, submission.pool.queue)
    if publish:
        publish_evaluation(evaluation)
    return True


def _send_build_hint(job: dict[str, Any], queue: str) -> None:
    """The sources to the pool's build slots, which build the solution's extensions on a runner host while its GPU
    evaluates earlier jobs (gpu_runner/prebuild.py). Only a hint: lost or expired, the evaluation builds itself."""
    from kernelhub.celery import app

    try:
        app.send_task(PREBUILD_TASK, kwargs={"job": {k: job[k] for k in PREBUILD_KEYS}}, queue=build_queue(queue),
                      expires=PREBUILD_EXPIRES_S)
    except Exception:  # noqa: BLE001 - the evaluation itself was sent; it builds for itself
        logger.warning("Could not send the build hint of evaluation %s to %s", job["evaluation_id"],
                       build_queue(queue), exc_info=True)


class JobRefused(Exception):
    """A runner's request on a job that it may not make now; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, *, status: int = 409, code: str = "conflict") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def _job_for_runner(*, evaluation_id: int, runner: Runner, job_token: str) -> Evaluation:
    evaluation = (Evaluation.objects.select_related("submission__pool")
                  .filter(pk=evaluation_id).first())
    if evaluation is None:
        raise JobRefused(f"No job {evaluation_id}.", status=404, code="not_found")
    if not job_token or not hmac.compare_digest(evaluation.job_token_hash, token_hash(job_token)):
        raise JobRefused("This job token is not (or no longer) valid for this job: it was re-queued or "
                         "the token is wrong. Drop the job.", status=403, code="bad_job_token")
    if evaluation.submission.pool_id != runner.pool_id:
        raise JobRefused(f"This job belongs to pool {evaluation.submission.pool.slug}, not to this runner's "
                         f"pool {runner.pool.slug}.", status=403, code="wrong_pool")
    return evaluation


def evaluation_claim(*, evaluation_id: int, runner: Runner, job_token: str) -> Evaluation:
    """queued -> running for the runner holding the current token. The same runner may claim again a job
    that it was running (its worker died and the broker redelivered the message)."""
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    now = timezone.now()
    fresh = Evaluation.objects.filter(pk=evaluation.pk, job_token_hash=evaluation.job_token_hash)
    claimed = fresh.filter(status=Evaluation.STATUS_QUEUED).update(
        status=Evaluation.STATUS_RUNNING, runner=runner, started_at=now, last_progress_at=now, stage="queued",
    )
    if not claimed:
        # A redelivery after the worker died mid-job: counts as an attempt, so a job that kills its worker
        # every time ends failed instead of looping.
        claimed = fresh.filter(status=Evaluation.STATUS_RUNNING, runner=runner,
                               attempt__lt=settings.JOB_MAX_ATTEMPTS).update(
            started_at=now, last_progress_at=now, stage="queued", attempt=F("attempt") + 1,
        )
        if not claimed and evaluation.status == Evaluation.STATUS_RUNNING and evaluation.runner_id == runner.pk:
            evaluation_requeue(evaluation=evaluation, reason="the runner's worker died during the job")
    if not claimed:
        evaluation.refresh_from_db()
        raise JobRefused(f"Job {evaluation.pk} is {evaluation.status}; it cannot be claimed.")
    evaluation.refresh_from_db()
    publish_evaluation(evaluation)
    return evaluation


def evaluation_stage(*, evaluation_id: int, runner: Runner, job_token: str, stage: str) -> Evaluation:
    """Records a stage of a running job; the same stage again just says the runner is alive."""
    if stage not in JOB_STAGES:
        raise JobRefused(f"Unknown stage {stage!r}: use one of {', '.join(JOB_STAGES)}.", status=400,
                         code="invalid")
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    previous_stage = evaluation.stage
    moved = Evaluation.objects.filter(
        pk=evaluation.pk, job_token_hash=evaluation.job_token_hash, status=Evaluation.STATUS_RUNNING,
        runner=runner,
    ).update(stage=stage, last_progress_at=timezone.now())
    if not moved:
        raise JobRefused(f"Job {evaluation.pk} is not running on this runner: stop working on it.")
    evaluation.refresh_from_db()
    if previous_stage != stage:
            publish_evaluation(evaluation)
    return evaluation


def _float_or_none(result: dict, key: str) -> float | None:
    value = result.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JobRefused(f"result.{key} must be a number or null, not {type(value).__name__}.", status=400,
                         code="invalid")
    return float(value)


def _result_text(result: dict) -> str:
    """The build or run log, where the evaluator gives one."""
    for key in ("log", "compile_log", "build_log"):
        value = result.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def evaluation_finish(*, evaluation_id: int, runner: Runner, job_token: str, result: dict) -> Evaluation:
    """running -> done, once, with the evaluator's object stored as is."""
    if not isinstance(result, dict):
        raise JobRefused("`result` must be the evaluator's JSON object.", status=400, code="invalid")
    verdict = result.get("verdict")
    if verdict not in Evaluation.VERDICTS:
        raise JobRefused(f"result.verdict must be one of {', '.join(Evaluation.VERDICTS)}, not {verdict!r}.",
                         status=400, code="invalid")
    correct = result.get("correct")
    if correct is not None and not isinstance(correct, bool):
        raise JobRefused("result.correct must be true, false or null.", status=400, code="invalid")
    timings = {key: _float_or_none(result, key) for key in
               ("runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile")}
    if verdict != "accepted":
        # A time only counts for a correct, accepted kernel.
        timings["runtime_us"] = None
        timings["speedup_vs_eager"] = None
        timings["speedup_vs_compile"] = None
    message = result.get("message") or ""
    if not isinstance(message, str):
        message = str(message)
    # Where and how it ran, kept apart for the pages and the dashboards (the whole object is in `result`).
    system_info = {key: result[key] for key in ("device", "versions", "isolation") if key in result}
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    now = timezone.now()
    finished = Evaluation.objects.filter(
        pk=evaluation.pk, job_token_hash=evaluation.job_token_hash, status=Evaluation.STATUS_RUNNING,
        runner=runner,
    ).update(
        status=Evaluation.STATUS_DONE, stage="done", verdict=verdict, correct=bool(correct) if correct is not None
        else None, message=message[:20000], result=result, log=_result_text(result)[:200000],
        system_info=system_info,
        finished_at=now, last_progress_at=now, **timings,
    )
    if not finished:
        evaluation.refresh_from_db()
        raise JobRefused(f"Job {evaluation.pk} is {evaluation.status} and not running on this runner: "
                         "its result is not taken.")
    evaluation.refresh_from_db()
    publish_evaluation(evaluation)
    return evaluation


def evaluation_give_up(*, evaluation_id: int, runner: Runner, job_token: str, message: str) -> Evaluation:
    """A runner could not evaluate the job (its own failure, not the solution's): re-queue it now."""
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    if evaluation.runner_id != runner.pk or evaluation.status != Evaluation.STATUS_RUNNING:
        raise JobRefused(f"Job {evaluation.pk} is not running on this runner.")
    evaluation_requeue(evaluation=evaluation, reason=f"runner {runner.name} gave up: {message[:500]}")
    evaluation.refresh_from_db()
    return evaluation


def evaluation_requeue(*, evaluation: Evaluation, reason: str) -> str:
    """Takes a job back from its runner (or re-sends a long-queued one): a new token and attempt + 1, or
    `failed` after JOB_MAX_ATTEMPTS. Returns "requeued", "failed" or "skipped" (it moved meanwhile)."""
    guard = Evaluation.objects.filter(pk=evaluation.pk, status=evaluation.status, attempt=evaluation.attempt,
                                      job_token_hash=evaluation.job_token_hash)
    now = timezone.now()
    if evaluation.attempt >= settings.JOB_MAX_ATTEMPTS:
        failed = guard.update(
            status=Evaluation.STATUS_FAILED, stage="done", finished_at=now, last_progress_at=now,
            job_token_hash="",
            message=(f"No runner finished this evaluation in {evaluation.attempt} attempts (last: {reason}). "
                     "This is an infrastructure failure, not a verdict on the code: submit again to retry."),
        )
        if failed:
            evaluation.refresh_from_db()
            publish_evaluation(evaluation)
            return "failed"
        return "skipped"
    # Back to queued under the old token's hash; evaluation_dispatch then rotates it.
    back = guard.update(status=Evaluation.STATUS_QUEUED, runner=None, stage="queued", started_at=None,
                        last_progress_at=now, message=f"re-queued: {reason}"[:20000])
    if not back:
        return "skipped"
    logger.warning("Re-queued evaluation %s (attempt %s): %s", evaluation.pk, evaluation.attempt, reason)
    transaction.on_commit(lambda: evaluation_dispatch(evaluation_id=evaluation.pk, attempt=evaluation.attempt))
    return "requeued"


def evaluations_sweep() -> dict[str, int]:
    """Re-queues running jobs whose runner fell silent, and queued jobs nobody picked up for too long.
    `held`: silent jobs left alone because their runner still heartbeats and may still be running them.
    `waiting`: queued jobs of a pool with no runner online to take them, left in its queue."""
    now = timezone.now()
    counts = {"requeued": 0, "failed": 0, "skipped": 0, "held": 0, "waiting": 0}
    silent = Evaluation.objects.filter(
        status=Evaluation.STATUS_RUNNING,
        last_progress_at__lt=now - timedelta(seconds=settings.JOB_SILENCE_TIMEOUT_S),
    ).select_related("runner")
    # A silent job whose runner still heartbeats is still held by it (a stage that kept the worker from posting,
    # such as a pre-screen holding the GIL): handing it to another attempt would run it twice at once, and block
    # the pool's next runner too. Celery's hard time limit (1.2 x soft, runner_config) kills the worker's job
    # process, so past it (and a heartbeat's margin) the job is no longer held; a silent runner is left to the
    # offline sweep (apps/devices), and one that never heartbeats (an API client without serve) to the silence.
    hard_limit_s = int(settings.JOB_SOFT_TIME_LIMIT_S * 1.2) + settings.RUNNER_OFFLINE_AFTER_S
    heartbeat_since = now - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)
    for evaluation in silent:
        runner = evaluation.runner
        if (runner is not None and runner.last_heartbeat_at is not None and runner.last_heartbeat_at >= heartbeat_since
                and evaluation.started_at is not None
                and evaluation.started_at > now - timedelta(seconds=hard_limit_s)):
            counts["held"] += 1
            continue
        runner_name = evaluation.runner.name if evaluation.runner else "unknown"
        reason = (f"runner {runner_name} said nothing for more than {settings.JOB_SILENCE_TIMEOUT_S} s "
                  f"during {evaluation.stage}")
        with transaction.atomic():
            counts[evaluation_requeue(evaluation=evaluation, reason=reason)] += 1
    stale = Evaluation.objects.filter(
        status=Evaluation.STATUS_QUEUED,
        last_progress_at__lt=now - timedelta(seconds=settings.JOB_QUEUED_TIMEOUT_S),
    )
    never_sent = Evaluation.objects.filter(
        status=Evaluation.STATUS_QUEUED, attempt=0,
        queued_at__lt=now - timedelta(seconds=settings.JOB_SILENCE_TIMEOUT_S),
    )
    # A pool with no runner online (none yet, as the h200 pool of `make run` on a machine without a GPU, or all
    # offline, disabled or draining) has nobody to take its jobs: they wait in its queue, nothing was lost, so no
    # attempt is spent on them and none fails. Their clock restarts, so that a runner that joins gets the whole
    # JOB_QUEUED_TIMEOUT_S to take them before they are sent again.
    served_pools = set(Runner.objects.filter(
        is_disabled=False, is_draining=False,
        last_heartbeat_at__gte=now - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S),
    ).values_list("pool_id", flat=True))
    waiting = []
    for evaluation in (stale | never_sent).select_related("submission__pool"):
        if evaluation.attempt > 0 and evaluation.submission.pool_id not in served_pools:
            waiting.append(evaluation.pk)
            continue
        reason = f"no runner of pool {evaluation.submission.pool.slug} took it"
        if evaluation.attempt == 0:
            # Its dispatch after commit never reached the broker.
            counts["requeued" if evaluation_dispatch(evaluation_id=evaluation.pk, attempt=0) else "skipped"] += 1
            continue
        with transaction.atomic():
            counts[evaluation_requeue(evaluation=evaluation, reason=reason)] += 1
    counts["waiting"] = Evaluation.objects.filter(pk__in=waiting, status=Evaluation.STATUS_QUEUED).update(
        last_progress_at=now)
    return counts


# --- The ANE track: finished on the site, or forwarded to a Mac pool ----------------------------------------

def evaluation_finish_on_site(*, evaluation_id: int, job_token_hash: str, result: dict[str, Any],
                              failed: bool = False) -> bool:
    """queued -> done (a verdict that needed no Mac) or failed (the problem cannot serve), guarded by the
    job's token: a job re-dispatched meanwhile is not written."""
    now = timezone.now()
    fields: dict[str, Any] = {"stage": "done", "finished_at": now, "last_progress_at": now,
                              "message": result["message"][:20000], "job_token_hash": ""}
    if failed:
        fields["status"] = Evaluation.STATUS_FAILED
    else:
        fields.update(status=Evaluation.STATUS_DONE, verdict=result["verdict"], correct=result["correct"],
                      result=result)
    written = Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.STATUS_QUEUED,
                                        job_token_hash=job_token_hash).update(**fields)
    if written:
        publish_evaluation(Evaluation.objects.select_related("submission").get(pk=evaluation_id))
    return bool(written)


def evaluation_forward(*, job: dict[str, Any]) -> bool:
    """Sends a prepared job on to its pool's queue, if it is still queued under the same token (the runner's
    claim is what moves it to running). False: it was re-dispatched or finished meanwhile."""
    from kernelhub.celery import app

    current = Evaluation.objects.filter(pk=job["evaluation_id"], status=Evaluation.STATUS_QUEUED,
                                        job_token_hash=token_hash(str(job["job_token"])))
    evaluation = current.select_related("submission__pool").first()
    if evaluation is None:
        return False
    app.send_task(EVALUATE_TASK, kwargs={"job": job}, queue=evaluation.submission.pool.queue)
    current.update(last_progress_at=timezone.now())
    return True


# --- Runners withdrawn: disabled by an admin (the devices app's signal), or gone offline -------------------------------------------------------------------

def runner_jobs_requeue(*, runner: Runner, reason: str) -> int:
    """A runner's running jobs back to the queue at once (it was disabled). Returns how many moved."""
    count = 0
    for evaluation in Evaluation.objects.filter(runner=runner, status=Evaluation.STATUS_RUNNING):
        with transaction.atomic():
            if evaluation_requeue(evaluation=evaluation, reason=reason) != "skipped":
                count += 1
    return count


def _runner_disabled(sender: Any, *, runner: Runner, reason: str, **kwargs: Any) -> int:
    return runner_jobs_requeue(runner=runner, reason=reason)


def running_jobs(runner_ids: list[int]) -> dict[int, list[signals.RunningJob]]:
    """What each runner is running, for the devices app's pages (signals.running_jobs)."""
    jobs: dict[int, list[signals.RunningJob]] = {}
    for evaluation in (Evaluation.objects.filter(runner_id__in=runner_ids, status=Evaluation.STATUS_RUNNING)
                       .select_related("submission__problem").order_by("started_at")):
        assert evaluation.runner_id is not None
        jobs.setdefault(evaluation.runner_id, []).append(signals.RunningJob(
            evaluation_id=evaluation.pk, submission_id=evaluation.submission_id,
            problem=evaluation.submission.problem.slug, stage=evaluation.stage, attempt=evaluation.attempt))
    return jobs


def runners_offline_requeue() -> int:
    """Re-queues the running jobs of runners that sent no heartbeat for RUNNER_OFFLINE_AFTER_S and whose job
    said nothing for as long, well before the sweeper's JOB_SILENCE_TIMEOUT_S would. Returns the count."""
    limit = timezone.now() - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)
    # A runner that never sent a heartbeat is left to the sweeper: it may be a client of the API without serve.
    jobs = (Evaluation.objects.filter(status=Evaluation.STATUS_RUNNING, runner__last_heartbeat_at__lt=limit,
                                      last_progress_at__lt=limit).select_related("runner"))
    count = 0
    for evaluation in jobs:
        runner = evaluation.runner
        assert runner is not None and runner.last_heartbeat_at is not None
        silent_s = int((timezone.now() - runner.last_heartbeat_at).total_seconds())
        reason = f"runner {runner.name} went offline (no heartbeat for {silent_s} s)"
        with transaction.atomic():
            outcome = evaluation_requeue(evaluation=evaluation, reason=reason)
        if outcome != "skipped":
            count += 1
            audit_record(action=AuditLog.ACTION_OFFLINE_REQUEUE, runner=runner,
                         detail=f"evaluation {evaluation.pk} {outcome}: {reason}")
    return count


def connect_signals() -> None:
    """Called once by the app's ready(): the devices app announces and asks, this module moves and answers."""
    signals.runner_disabled.connect(_runner_disabled, dispatch_uid="lifecycle.runner_disabled")
    signals.set_running_jobs_reader(running_jobs)
