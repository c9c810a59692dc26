"""A submission to an ANE pool is prepared on the site first: an ineligible graph gets its verdict there at once,
an eligible one reaches the Mac pool's queue with its prepared `ane` entry."""

import base64

import numpy as np
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

from ane_runner.evaluate_mac import reference_sets
from ane_runner.package import package_spec, package_unzip
from apps.submissions.models import Evaluation
from apps.submissions.tasks import prepare_ane_job
from tests.ane.helpers import EXAMPLES, POINTWISE_SHAPE, convert_zip, pointwise_weights
from tests.ane.site import POOL_QUEUE, PREPARE_QUEUE, submit

BUILDER = (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_text()


def _gather_package() -> str:
    import coremltools as ct

    w, b = pointwise_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        x = mb.gather(x=x, indices=np.arange(511, -1, -1, dtype=np.int32), axis=1)
        return mb.relu(x=mb.conv(x=x, weight=w[:, ::-1].copy(), bias=b))

    return "base64:" + base64.b64encode(convert_zip(prog)).decode()


def _dispatched(client, source, broker_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client, source)
    assert response.status_code == 201, response.json()
    sent = broker_queue(PREPARE_QUEUE)
    assert [m["task"] for m in sent] == ["submissions.prepare_ane_job"]
    job = sent[0]["kwargs"]["job"]
    assert job["evaluation_id"] == response.json()["evaluation_id"]
    assert job["language"] == "coreml" and "ane" not in job
    # Nothing reaches a Mac before the site has looked at it.
    assert broker_queue(POOL_QUEUE) == []
    job["submission_id"] = response.json()["id"]  # for the test only; not part of the message
    return job


def test_it_sends_an_eligible_builder_to_the_mac_pool_with_its_prepared_job(
        ane_problem, alice, api, broker_queue, django_capture_on_commit_callbacks, tmp_path):
    job = _dispatched(api(alice.token), BUILDER, broker_queue, django_capture_on_commit_callbacks)
    submission_id = job.pop("submission_id")
    assert submission_id and prepare_ane_job(job) == "sent"
    forwarded = broker_queue(POOL_QUEUE)
    assert [m["task"] for m in forwarded] == ["gpu_runner.evaluate_job"]
    mac_job = forwarded[0]["kwargs"]["job"]
    assert {k: v for k, v in mac_job.items() if k != "ane"} == job
    ane = mac_job["ane"]
    assert len(reference_sets(ane)) == ane["input_sets"] == 3  # the Mac's own digest check passes
    spec = package_spec(package_unzip(base64.b64decode(ane["package_b64"]), tmp_path / "pkg"))
    assert spec is not None
    evaluation = Evaluation.objects.get(pk=job["evaluation_id"])
    assert evaluation.status == "queued" and evaluation.verdict == ""  # the Mac's claim moves it on


def test_it_rejects_an_ineligible_package_at_once_with_the_issues(
        ane_problem, alice, api, broker_queue, django_capture_on_commit_callbacks):
    job = _dispatched(api(alice.token), _gather_package(), broker_queue, django_capture_on_commit_callbacks)
    submission_id = job.pop("submission_id")
    assert prepare_ane_job(job) == "rejected"
    assert broker_queue(POOL_QUEUE) == []
    evaluation = Evaluation.objects.get(pk=job["evaluation_id"])
    assert (evaluation.status, evaluation.stage, evaluation.verdict) == ("done", "done", "rejected")
    assert evaluation.correct is None and evaluation.runtime_us is None and evaluation.finished_at is not None
    assert "[unsupported_op] gather" in evaluation.message
    assert evaluation.result["validation"]["eligible"] is False
    # The owner reads the verdict and its issues through the API like any other result.
    body = api(alice.token).get(f"/api/v1/submissions/{submission_id}/").json()
    assert (body["status"], body["verdict"]) == ("done", "rejected")
    assert "[unsupported_op] gather" in body["message"]
    assert body["statistics"]["validation"]["issues"]
    # Anyone else sees the verdict, not the issues or the report: they describe the private graph.
    public = api().get(f"/api/v1/submissions/{submission_id}/").json()
    assert public["verdict"] == "rejected" and "gather" not in public["message"]
    assert "validation" not in public["statistics"] and "gather" not in str(public["statistics"])


def test_a_zip_that_is_no_package_is_a_compile_error(
        ane_problem, alice, api, broker_queue, django_capture_on_commit_callbacks):
    junk = "base64:" + base64.b64encode(b"PK\x03\x04 not really a zip").decode()
    job = _dispatched(api(alice.token), junk, broker_queue, django_capture_on_commit_callbacks)
    job.pop("submission_id")
    assert prepare_ane_job(job) == "rejected"
    evaluation = Evaluation.objects.get(pk=job["evaluation_id"])
    assert evaluation.verdict == "compile_error" and "[package]" in evaluation.message


def test_a_job_dispatched_again_meanwhile_is_left_alone(
        ane_problem, alice, api, broker_queue, django_capture_on_commit_callbacks):
    from apps.submissions.models import token_hash

    job = _dispatched(api(alice.token), BUILDER, broker_queue, django_capture_on_commit_callbacks)
    job.pop("submission_id")
    # The sweeper re-sent it under a new token: the old message must not write or send anything.
    Evaluation.objects.filter(pk=job["evaluation_id"]).update(job_token_hash=token_hash("newer"), attempt=2)
    assert prepare_ane_job(job) == "stale"
    assert broker_queue(POOL_QUEUE) == []
    assert Evaluation.objects.get(pk=job["evaluation_id"]).status == "queued"


def test_a_package_is_refused_on_a_pool_that_is_not_ane(ane_problem, alice, api):
    from apps.devices.services import pool_get_or_create

    ane_problem.pools.add(pool_get_or_create(slug="cpu")[0])
    zipped = "base64:" + base64.b64encode(b"PK\x03\x04 a zip").decode()
    response = submit(api(alice.token), zipped, hardware="cpu")
    assert response.status_code == 400
    assert "ANE pool" in response.json()["error"]["message"]
