"""Results as Mac runners post them, through the real runner API (claim, stages, result), for the ANE board's
tests. The result objects are shaped like ane_runner.evaluate_mac's, with speedups and TFLOPS derived from the
times the way it derives them."""

from tests.ane.helpers import EXAMPLES
from tests.ane.site import submit

BUILDER = (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_text()


def actor(name: str, kind: str):
    """An entrant of `kind` owned by a new user `name`, and its API token."""
    from django.contrib.auth import get_user_model

    from apps.submissions.services import entrant_create

    user = get_user_model().objects.create_user(username=name.lower(), password="a-long-password-1")
    entrant, token = entrant_create(name=f"{name}'s entry", kind=kind, owner=user)
    return entrant, token


def queued_job(client) -> dict:
    """A submission whose dispatch is done by hand (as tests/site's queued_job does): the job's token rotated,
    without paying for another preparation. Enough for a runner to claim and report."""
    from apps.submissions.models import Evaluation, token_hash

    response = submit(client, BUILDER)
    assert response.status_code == 201, response.json()
    pk = response.json()["evaluation_id"]
    token = f"test-token-{pk}"
    Evaluation.objects.filter(pk=pk).update(job_token_hash=token_hash(token), attempt=1)
    return {"evaluation_id": pk, "job_token": token}


def accepted(flops: int, *, runtime_us: float, coreml_us: float, coreml_cpu_us: float, op_share: float,
              cost_share: float) -> dict:
    """An accepted result object; flops is the problem's work (the job's `ane.flops`)."""
    tflops = flops / (runtime_us * 1e-6) / 1e12
    return {
        "verdict": "accepted", "correct": True, "runtime_us": runtime_us, "p90_us": runtime_us * 1.1, "calls": 50,
        "coreml_us": coreml_us, "coreml_cpu_us": coreml_cpu_us, "speedup_vs_coreml": coreml_us / runtime_us,
        "speedup_vs_coreml_cpu": coreml_cpu_us / runtime_us, "flops": flops, "tflops": tflops,
        "placement": {"ops": 2, "ops_by_device": {"ane": 2}, "ane_op_share": op_share, "ane_cost_share": cost_share},
        "ane_power_w": None, "tflops_per_watt": None, "system": {"chip": "m4", "macos": "15.1", "machine": "arm64"},
        "eager_us": None, "compile_us": None, "speedup_vs_eager": None, "speedup_vs_compile": None, "message": "",
    }


def mac_reports(api, secret: str, job: dict, result: dict) -> None:
    """What ane_runner.worker.run_ane_job does over gpu_runner.site_client: claim, stages, result."""
    client, token, pk = api(runner=secret), job["job_token"], job["evaluation_id"]
    assert client.post(f"/api/v1/jobs/{pk}/claim/", HTTP_X_JOB_TOKEN=token).status_code == 200
    for stage in ("compiling", "checking", "timing"):
        response = client.post(f"/api/v1/jobs/{pk}/stage/", {"stage": stage}, format="json", HTTP_X_JOB_TOKEN=token)
        assert response.status_code == 200, response.json()
    response = client.post(f"/api/v1/jobs/{pk}/result/", {"result": result}, format="json", HTTP_X_JOB_TOKEN=token)
    assert response.status_code == 200, response.json()


def mac_posts_over_http(base_url: str, secret: str, entrant, problem, result: dict) -> None:
    """A submission of BUILDER by `entrant`, dispatched by hand (no site worker: the job's token set as dispatch
    would rotate it), then claimed and reported by the Mac runner over the live server's runner API."""
    import httpx

    from apps.submissions import models, services
    from apps.submissions.models import Evaluation
    from tests.ane.site import POOL

    _submission, evaluation, _ = services.submission_create(
        entrant=entrant, problem_slug=problem.slug, source=BUILDER, language="coreml", hardware=POOL)
    token = f"http-token-{evaluation.pk}"
    Evaluation.objects.filter(pk=evaluation.pk).update(job_token_hash=models.token_hash(token), attempt=1,
                                                       status=Evaluation.STATUS_QUEUED)
    api = httpx.Client(base_url=base_url, timeout=10,
                       headers={"Authorization": f"Runner {secret}", "X-Job-Token": token})
    jobs = f"/api/v1/jobs/{evaluation.pk}"
    assert api.post(f"{jobs}/claim/").status_code == 200
    response = api.post(f"{jobs}/result/", json={"result": result})
    assert response.status_code == 200, response.text
