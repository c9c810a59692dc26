"""A job whose runner still heartbeats is still held by it: the sweeper does not hand it to another attempt while
the runner may be running it (a pre-screen that held the GIL once silenced a job's keep-alives for 30 minutes
and it ran twice at once). Past Celery's hard time limit (1.2 x soft), the job is no longer held."""

from datetime import timedelta

from django.utils import timezone

from apps.submissions.lifecycle import evaluations_sweep
from apps.submissions.models import Evaluation


def _heartbeat(client):
    response = client.post("/api/v1/runners/heartbeat/", {"host_info": {}, "telemetry": {}}, format="json")
    assert response.status_code == 200, response.content


def _age(evaluation, *, silent_s, started_s):
    now = timezone.now()
    Evaluation.objects.filter(pk=evaluation.pk).update(last_progress_at=now - timedelta(seconds=silent_s),
                                                       started_at=now - timedelta(seconds=started_s))


def test_a_silent_job_of_a_heartbeating_runner_is_left_with_it(claimed, settings, redis_queue):
    evaluation, job, client = claimed
    _heartbeat(client)
    _age(evaluation, silent_s=settings.JOB_SILENCE_TIMEOUT_S + 60, started_s=settings.JOB_SILENCE_TIMEOUT_S + 90)
    counts = evaluations_sweep()
    assert counts["held"] == 1 and counts["requeued"] == 0
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and evaluation.attempt == 1
    assert redis_queue("pool.cpu") == []
    # Its runner's keep-alive, once it can post again, still counts and its result is taken.
    assert client.post(f"/api/v1/jobs/{evaluation.pk}/stage/", {"stage": "prescreen"}, format="json",
                       HTTP_X_JOB_TOKEN=job["job_token"]).status_code == 200


def test_past_the_hard_time_limit_the_job_is_requeued(claimed, settings, redis_queue,
                                                      django_capture_on_commit_callbacks):
    evaluation, job, client = claimed
    _heartbeat(client)
    hard_limit_s = int(settings.JOB_SOFT_TIME_LIMIT_S * 1.2)
    _age(evaluation, silent_s=hard_limit_s, started_s=hard_limit_s + settings.RUNNER_OFFLINE_AFTER_S + 5)
    with django_capture_on_commit_callbacks(execute=True):
        counts = evaluations_sweep()
    assert counts["requeued"] == 1 and counts["held"] == 0
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.attempt == 2
    assert redis_queue("pool.cpu")[0]["kwargs"]["job"]["attempt"] == 2


def test_a_runner_without_heartbeats_is_judged_by_the_silence(claimed, settings,
                                                              django_capture_on_commit_callbacks):
    evaluation, job, client = claimed  # an API client without `serve`: no heartbeat ever
    _age(evaluation, silent_s=settings.JOB_SILENCE_TIMEOUT_S + 60, started_s=settings.JOB_SILENCE_TIMEOUT_S + 90)
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluations_sweep()["requeued"] == 1
