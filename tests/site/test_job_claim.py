"""POST /api/v1/jobs/{id}/claim/: queued -> running, once, by a runner of the job's pool with its token."""

from apps.submissions.models import Evaluation
from tests.site.conftest import error_of, queued_job, submit


def _job(api, alice):
    body = submit(api(alice.token)).json()
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    return evaluation, queued_job(evaluation)


def _claim(api, secret, evaluation, token):
    client = api(runner=secret)
    return client.post(f"/api/v1/jobs/{evaluation.pk}/claim/", HTTP_X_JOB_TOKEN=token)


def test_a_runner_claims_a_queued_job(problem, alice, runners, api):
    evaluation, token = _job(api, alice)
    response = _claim(api, runners["cpu-1"].secret, evaluation, token)
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "running"
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and evaluation.runner == runners["cpu-1"].runner
    assert evaluation.started_at is not None


def test_a_second_claim_by_another_runner_is_refused(problem, alice, runners, api):
    evaluation, token = _job(api, alice)
    assert _claim(api, runners["cpu-1"].secret, evaluation, token).status_code == 200
    response = _claim(api, runners["cpu-2"].secret, evaluation, token)
    assert response.status_code == 409
    assert error_of(response)["code"] == "conflict"
    evaluation.refresh_from_db()
    assert evaluation.runner == runners["cpu-1"].runner


def test_a_wrong_job_token_is_refused(problem, alice, runners, api):
    evaluation, _token = _job(api, alice)
    response = _claim(api, runners["cpu-1"].secret, evaluation, "guessed")
    assert response.status_code == 403
    assert error_of(response)["code"] == "bad_job_token"
    response = api(runner=runners["cpu-1"].secret).post(f"/api/v1/jobs/{evaluation.pk}/claim/")
    assert response.status_code == 403


def test_a_runner_of_another_pool_is_refused(problem, alice, runners, api):
    evaluation, token = _job(api, alice)
    response = _claim(api, runners["h200-1"].secret, evaluation, token)
    assert response.status_code == 403
    assert error_of(response)["code"] == "wrong_pool"


def test_a_disabled_runner_is_refused(problem, alice, runners, api):
    evaluation, token = _job(api, alice)
    runner = runners["cpu-1"].runner
    runner.is_disabled = True
    runner.save()
    response = _claim(api, runners["cpu-1"].secret, evaluation, token)
    assert response.status_code == 403
    assert "disabled" in error_of(response)["message"]


def test_no_runner_secret_is_a_401(problem, alice, runners, api):
    evaluation, token = _job(api, alice)
    assert api().post(f"/api/v1/jobs/{evaluation.pk}/claim/", HTTP_X_JOB_TOKEN=token).status_code == 401
    assert _claim(api, "khr_wrong", evaluation, token).status_code == 401
    # An entrant's token is not a runner's.
    response = api(alice.token).post(f"/api/v1/jobs/{evaluation.pk}/claim/", HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 401


def test_the_same_runner_claims_again_after_its_worker_died_and_it_counts_as_an_attempt(
        problem, alice, runners, api, settings):
    settings.JOB_MAX_ATTEMPTS = 2
    evaluation, token = _job(api, alice)
    assert _claim(api, runners["cpu-1"].secret, evaluation, token).status_code == 200
    # The broker redelivers the message (reject_on_worker_lost) to the same host.
    again = _claim(api, runners["cpu-1"].secret, evaluation, token)
    assert again.status_code == 200 and again.json()["attempt"] == 2
    # A job that kills its worker every time ends failed instead of looping.
    third = _claim(api, runners["cpu-1"].secret, evaluation, token)
    assert third.status_code == 409
    evaluation.refresh_from_db()
    assert evaluation.status == "failed" and "worker died" in evaluation.message


def test_an_unknown_job_is_a_404(db, runners, api):
    response = api(runner=runners["cpu-1"].secret).post("/api/v1/jobs/424242/claim/", HTTP_X_JOB_TOKEN="x")
    assert response.status_code == 404
    error_of(response)
