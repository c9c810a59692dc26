"""Who may speak for a runner: a disabled runner and a rotated secret are refused; a runner cannot write
another runner's job; a disabled runner's job goes back to the queue and its late result is refused."""

from apps.devices.services import runner_disable, runner_rotate_secret_audited
from tests.devices.helpers import claimed_job


def test_it_refuses_a_disabled_runner_everywhere(runners, api):
    runner_disable(runner=runners["cpu-1"].runner)
    client = api(runner=runners["cpu-1"].secret)
    for method, path in (("get", "/api/v1/runners/me/"), ("post", "/api/v1/runners/heartbeat/"),
                         ("post", "/api/v1/runners/calibration/"), ("post", "/api/v1/jobs/1/claim/")):
        response = getattr(client, method)(path, {}, format="json")
        assert response.status_code == 403, (path, response.status_code)
        assert "disabled" in response.json()["error"]["message"]


def test_it_refuses_the_secret_before_a_rotation(runners, api):
    old = runners["cpu-1"].secret
    new = runner_rotate_secret_audited(runner=runners["cpu-1"].runner)
    assert new != old
    refused = api(runner=old).post("/api/v1/runners/heartbeat/", {}, format="json")
    assert refused.status_code == 401 and "create_runner" in refused.json()["error"]["message"]
    assert api(runner=new).post("/api/v1/runners/heartbeat/", {}, format="json").status_code == 200


def test_a_runner_cannot_write_another_runners_job(problem, alice, runners, api, redis_queue,
                                                   django_capture_on_commit_callbacks):
    evaluation, job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                  capture=django_capture_on_commit_callbacks, runner="cpu-1")
    # cpu-2 of the same pool holds the job token (say it read the message too): still refused.
    other = api(runner=runners["cpu-2"].secret)
    url = f"/api/v1/jobs/{evaluation.pk}"
    stage = other.post(f"{url}/stage/", {"stage": "timing"}, format="json", HTTP_X_JOB_TOKEN=job["job_token"])
    result = other.post(f"{url}/result/", {"result": {"verdict": "accepted", "correct": True, "runtime_us": 1.0}},
                        format="json", HTTP_X_JOB_TOKEN=job["job_token"])
    give_up = other.post(f"{url}/fail/", {"message": "mine now"}, format="json", HTTP_X_JOB_TOKEN=job["job_token"])
    assert (stage.status_code, result.status_code, give_up.status_code) == (409, 409, 409)
    # A runner of another pool is refused as such.
    foreign = api(runner=runners["h200-1"].secret).post(f"{url}/result/", {"result": {"verdict": "accepted"}},
                                                        format="json", HTTP_X_JOB_TOKEN=job["job_token"])
    assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "wrong_pool"
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and evaluation.runner == runners["cpu-1"].runner
    assert evaluation.verdict in ("", None)


def test_a_disabled_runners_job_is_requeued_and_its_late_result_refused(
        problem, alice, runners, api, redis_queue, django_capture_on_commit_callbacks):
    evaluation, job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                  capture=django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        runner_disable(runner=runners["cpu-1"].runner)
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.runner is None and "disabled" in evaluation.message
    new_job = redis_queue("pool.cpu")[0]["kwargs"]["job"]
    assert new_job["evaluation_id"] == evaluation.pk and new_job["job_token"] != job["job_token"]
    late = api(runner=runners["cpu-1"].secret).post(
        f"/api/v1/jobs/{evaluation.pk}/result/", {"result": {"verdict": "accepted"}}, format="json",
        HTTP_X_JOB_TOKEN=job["job_token"])
    assert late.status_code == 403
    # Another runner of the pool takes it with the new token.
    claim = api(runner=runners["cpu-2"].secret).post(f"/api/v1/jobs/{evaluation.pk}/claim/",
                                                     HTTP_X_JOB_TOKEN=new_job["job_token"])
    assert claim.status_code == 200
