"""Stages and the result: only the claiming runner, only while running, the result once."""

import pytest

from apps.submissions.models import Evaluation
from tests.site.conftest import error_of, queued_job, submit

RESULT = {"verdict": "accepted", "correct": True, "runtime_us": 12.5, "eager_us": 25.0, "compile_us": 20.0,
          "speedup_vs_eager": 2.0, "speedup_vs_compile": 1.6, "message": "", "timing": {"n": 50, "std": 0.2},
          "log": "built in 31 s"}


@pytest.fixture
def running(problem, alice, runners, api):
    body = submit(api(alice.token)).json()
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    token = queued_job(evaluation)
    client = api(runner=runners["cpu-1"].secret)
    assert client.post(f"/api/v1/jobs/{evaluation.pk}/claim/", HTTP_X_JOB_TOKEN=token).status_code == 200
    return evaluation, token, client


def test_the_claiming_runner_reports_stages(running):
    evaluation, token, client = running
    for stage in ("compiling", "checking", "timing", "timing"):
        response = client.post(f"/api/v1/jobs/{evaluation.pk}/stage/", {"stage": stage}, format="json",
                               HTTP_X_JOB_TOKEN=token)
        assert response.status_code == 200, response.json()
    evaluation.refresh_from_db()
    assert evaluation.stage == "timing"


def test_an_unknown_stage_is_a_400(running):
    evaluation, token, client = running
    response = client.post(f"/api/v1/jobs/{evaluation.pk}/stage/", {"stage": "done"}, format="json",
                           HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 400
    assert "stage" in error_of(response)["fields"]


def test_another_runner_cannot_write_the_job(running, runners, api):
    evaluation, token, _client = running
    other = api(runner=runners["cpu-2"].secret)
    stage = other.post(f"/api/v1/jobs/{evaluation.pk}/stage/", {"stage": "timing"}, format="json",
                       HTTP_X_JOB_TOKEN=token)
    result = other.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": RESULT}, format="json",
                        HTTP_X_JOB_TOKEN=token)
    assert stage.status_code == 409 and result.status_code == 409
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and evaluation.stage == "queued"


def test_the_result_is_stored_once(running, alice, api):
    evaluation, token, client = running
    response = client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": RESULT}, format="json",
                           HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 200, response.json()
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.stage, evaluation.verdict) == ("done", "done", "accepted")
    assert evaluation.correct is True and evaluation.runtime_us == 12.5 and evaluation.speedup_vs_compile == 1.6
    assert evaluation.result == RESULT and evaluation.log == "built in 31 s"
    assert evaluation.finished_at is not None
    again = client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": RESULT | {"runtime_us": 1.0}},
                        format="json", HTTP_X_JOB_TOKEN=token)
    assert again.status_code == 409
    evaluation.refresh_from_db()
    assert evaluation.runtime_us == 12.5
    # The owner reads it through the public API.
    body = api(alice.token).get(f"/api/v1/submissions/{evaluation.submission_id}/").json()
    assert body["verdict"] == "accepted" and body["speedup_vs_eager"] == 2.0
    assert body["statistics"]["timing"] == {"n": 50, "std": 0.2}


def test_a_rejected_result_keeps_no_runtime(running):
    evaluation, token, client = running
    result = RESULT | {"verdict": "rejected", "correct": True, "message": "stream escape"}
    assert client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": result}, format="json",
                       HTTP_X_JOB_TOKEN=token).status_code == 200
    evaluation.refresh_from_db()
    assert evaluation.verdict == "rejected" and evaluation.runtime_us is None and evaluation.speedup_vs_eager is None
    assert evaluation.eager_us == 25.0


@pytest.mark.parametrize("bad", [
    {"verdict": "fast"},
    {"verdict": "accepted", "runtime_us": "12"},
    {"verdict": "accepted", "correct": "yes"},
])
def test_a_malformed_result_is_a_400(running, bad):
    evaluation, token, client = running
    response = client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": bad}, format="json",
                           HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 400
    error_of(response)
    evaluation.refresh_from_db()
    assert evaluation.status == "running"


def test_a_result_without_the_result_object_is_a_400(running):
    evaluation, token, client = running
    response = client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"verdict": "accepted"}, format="json",
                           HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 400
    assert "result" in error_of(response)["fields"]


def test_a_late_result_after_a_requeue_is_refused(running, settings):
    from apps.submissions.lifecycle import evaluation_requeue

    evaluation, token, client = running
    evaluation.refresh_from_db()
    evaluation_requeue(evaluation=evaluation, reason="test: the runner fell silent")
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.runner is None
    response = client.post(f"/api/v1/jobs/{evaluation.pk}/result/", {"result": RESULT}, format="json",
                           HTTP_X_JOB_TOKEN=token)
    # Queued again (the sweeper's dispatch then rotates the token): the old runner's result is not taken.
    assert response.status_code == 409
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.verdict == ""


def test_a_runner_gives_a_job_back(running, settings):
    evaluation, token, client = running
    response = client.post(f"/api/v1/jobs/{evaluation.pk}/fail/", {"message": "CUDA driver error"},
                           format="json", HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 200
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and "CUDA driver error" in evaluation.message
