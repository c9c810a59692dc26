"""The job the site really sends is one the runners' contract (gpu_runner/contract.py) reads, and every stage
the contract lets a runner report is taken by the site."""

from apps.submissions.models import Evaluation
from gpu_runner.contract import RUNNER_STAGES, Job
from tests.site.conftest import queued_job, submit


def test_it_sends_a_job_the_contract_reads(problem, alice, api, redis_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        body = submit(api(alice.token)).json()
    [message] = redis_queue("pool.cpu")
    job = Job.from_json(message["kwargs"]["job"])
    assert job.evaluation_id == body["evaluation_id"] and job.device == "cpu" and job.language == "cpp"
    assert job.to_json() == message["kwargs"]["job"]


def test_it_takes_every_stage_a_runner_may_report(problem, alice, runners, api):
    body = submit(api(alice.token)).json()
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    token = queued_job(evaluation)
    client = api(runner=runners["cpu-1"].secret)
    assert client.post(f"/api/v1/jobs/{evaluation.pk}/claim/", HTTP_X_JOB_TOKEN=token).status_code == 200
    for stage in RUNNER_STAGES:
        response = client.post(f"/api/v1/jobs/{evaluation.pk}/stage/", {"stage": stage}, format="json",
                               HTTP_X_JOB_TOKEN=token)
        assert response.status_code == 200, (stage, response.json())
        evaluation.refresh_from_db()
        assert evaluation.stage == stage
        Evaluation._meta.get_field("stage").clean(stage, evaluation)  # the model's choices know it too
