"""A runner that stops sending heartbeats goes offline and its job goes back to the queue (a new token), before
the sweeper's JOB_SILENCE_TIMEOUT_S; a runner that still heartbeats keeps its job."""

from datetime import timedelta

from django.utils import timezone

from apps.devices.models import AuditLog, Runner
from apps.submissions.models import Evaluation
from apps.submissions.tasks import sweep_offline_runners
from tests.devices.helpers import claimed_job, heartbeat


def _age(runner, evaluation, *, heartbeat_s: int, progress_s: int) -> None:
    now = timezone.now()
    Runner.objects.filter(pk=runner.pk).update(last_heartbeat_at=now - timedelta(seconds=heartbeat_s))
    Evaluation.objects.filter(pk=evaluation.pk).update(last_progress_at=now - timedelta(seconds=progress_s))


def test_an_offline_runners_job_is_requeued(problem, alice, runners, api, redis_queue, settings,
                                            django_capture_on_commit_callbacks):
    heartbeat(api, runners["cpu-1"].secret)
    evaluation, job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                  capture=django_capture_on_commit_callbacks)
    gone = settings.RUNNER_OFFLINE_AFTER_S + 5
    assert gone < settings.JOB_SILENCE_TIMEOUT_S  # the point: sooner than the sweeper's silence rule
    _age(runners["cpu-1"].runner, evaluation, heartbeat_s=gone, progress_s=gone)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_offline_runners() == 1
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.runner is None and evaluation.attempt == 2
    assert "runner cpu-1 went offline" in evaluation.message
    new_job = redis_queue("pool.cpu")[0]["kwargs"]["job"]
    assert new_job["evaluation_id"] == evaluation.pk and new_job["job_token"] != job["job_token"]
    entry = AuditLog.objects.get(action=AuditLog.ACTION_OFFLINE_REQUEUE)
    assert entry.runner_name == "cpu-1" and f"evaluation {evaluation.pk} requeued" in entry.detail
    # Another runner finishes it; the one that vanished cannot write it when it comes back.
    assert api(runner=runners["cpu-2"].secret).post(f"/api/v1/jobs/{evaluation.pk}/claim/",
                                                    HTTP_X_JOB_TOKEN=new_job["job_token"]).status_code == 200
    late = api(runner=runners["cpu-1"].secret).post(f"/api/v1/jobs/{evaluation.pk}/result/",
                                                    {"result": {"verdict": "accepted"}}, format="json",
                                                    HTTP_X_JOB_TOKEN=job["job_token"])
    assert late.status_code == 403


def test_a_runner_that_still_heartbeats_keeps_its_job(problem, alice, runners, api, redis_queue, settings,
                                                       django_capture_on_commit_callbacks):
    evaluation, _job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                   capture=django_capture_on_commit_callbacks)
    # A long build: the job is quiet, but the host's heartbeat is fresh.
    _age(runners["cpu-1"].runner, evaluation, heartbeat_s=5, progress_s=settings.RUNNER_OFFLINE_AFTER_S + 60)
    assert sweep_offline_runners() == 0
    evaluation.refresh_from_db()
    assert evaluation.status == "running"


def test_a_job_still_reporting_is_kept_even_if_heartbeats_stop(problem, alice, runners, api, redis_queue, settings,
                                                              django_capture_on_commit_callbacks):
    evaluation, _job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                   capture=django_capture_on_commit_callbacks)
    _age(runners["cpu-1"].runner, evaluation, heartbeat_s=settings.RUNNER_OFFLINE_AFTER_S + 60, progress_s=5)
    assert sweep_offline_runners() == 0
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and redis_queue("pool.cpu") == []
