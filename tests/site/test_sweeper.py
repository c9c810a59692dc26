"""The sweeper: silent running jobs and long-queued ones go back to the queue with a new token, attempt + 1;
after JOB_MAX_ATTEMPTS they end failed with a message. Real messages on the test run's broker."""

from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from apps.devices.models import Runner
from apps.submissions.lifecycle import evaluations_sweep
from apps.submissions.models import Evaluation
from tests.site.conftest import submit


def _silence(evaluation, seconds):
    Evaluation.objects.filter(pk=evaluation.pk).update(last_progress_at=timezone.now() - timedelta(seconds=seconds))


def test_a_silent_running_job_is_requeued_with_a_new_token(claimed, settings, redis_queue,
                                                           django_capture_on_commit_callbacks):
    evaluation, job, client = claimed
    _silence(evaluation, settings.JOB_SILENCE_TIMEOUT_S + 1)
    with django_capture_on_commit_callbacks(execute=True):
        counts = evaluations_sweep()
    assert counts["requeued"] == 1
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.attempt == 2 and evaluation.runner is None
    assert "said nothing" in evaluation.message
    new_job = redis_queue("pool.cpu")[0]["kwargs"]["job"]
    assert new_job["attempt"] == 2 and new_job["job_token"] != job["job_token"]
    # The runner that fell silent comes back: its old token writes nothing.
    late = client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": {"verdict": "accepted"}},
                       format="json", HTTP_X_JOB_TOKEN=job["job_token"])
    assert late.status_code == 403
    claim_old = client.post(f"/api/v1/jobs/{evaluation.pk}/claim/", HTTP_X_JOB_TOKEN=job["job_token"])
    assert claim_old.status_code == 403
    # The new message is claimable.
    assert client.post(f"/api/v1/jobs/{evaluation.pk}/claim/",
                       HTTP_X_JOB_TOKEN=new_job["job_token"]).status_code == 200


def test_a_job_that_keeps_reporting_is_left_alone(claimed, settings, redis_queue):
    evaluation, job, client = claimed
    _silence(evaluation, settings.JOB_SILENCE_TIMEOUT_S - 60)
    assert evaluations_sweep() == {"requeued": 0, "failed": 0, "skipped": 0, "held": 0, "waiting": 0}
    evaluation.refresh_from_db()
    assert evaluation.status == "running"
    assert redis_queue("pool.cpu") == []


def test_after_the_last_attempt_the_job_fails_with_a_message(claimed, settings, redis_queue,
                                                             django_capture_on_commit_callbacks):
    evaluation, job, client = claimed
    settings.JOB_MAX_ATTEMPTS = 1
    _silence(evaluation, settings.JOB_SILENCE_TIMEOUT_S + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluations_sweep()["failed"] == 1
    evaluation.refresh_from_db()
    assert evaluation.status == "failed" and evaluation.finished_at is not None
    assert "infrastructure failure" in evaluation.message and "submit again" in evaluation.message
    assert redis_queue("pool.cpu") == []


def test_a_long_queued_job_is_sent_again(problem, alice, api, runners, settings, redis_queue,
                                         django_capture_on_commit_callbacks):
    # A runner online that would have taken it (without one, it waits: test_run_local_setup.py).
    Runner.objects.filter(name="cpu-1").update(last_heartbeat_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        body = submit(api(alice.token)).json()
    redis_queue.client.delete("pool.cpu")  # the broker lost it
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    _silence(evaluation, settings.JOB_QUEUED_TIMEOUT_S + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluations_sweep()["requeued"] == 1
    job = redis_queue("pool.cpu")[0]["kwargs"]["job"]
    assert job["evaluation_id"] == evaluation.pk and job["attempt"] == 2


def test_a_job_never_sent_is_sent_by_the_sweeper(problem, alice, api, settings, redis_queue,
                                                 django_capture_on_commit_callbacks):
    # Created without running the on-commit dispatch (as if the broker was down at that moment).
    body = submit(api(alice.token)).json()
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    assert evaluation.attempt == 0
    Evaluation.objects.filter(pk=evaluation.pk).update(
        queued_at=timezone.now() - timedelta(seconds=settings.JOB_SILENCE_TIMEOUT_S + 1))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("sweep_jobs")
    assert redis_queue("pool.cpu")[0]["kwargs"]["job"]["attempt"] == 1


def test_the_sweeper_is_scheduled_by_beat(settings):
    from kernelhub.celery import app

    schedule = settings.CELERY_BEAT_SCHEDULE["sweep-jobs"]
    assert schedule["task"] == "submissions.sweep_jobs"
    app.loader.import_default_modules()
    assert "submissions.sweep_jobs" in app.tasks
