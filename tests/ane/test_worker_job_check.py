"""The Mac runner checks a job against gpu_runner/contract.py before it claims it: a job the site did not
prepare for the Neural Engine (no `ane`) or a malformed one is dropped with the reason, and the site is not called."""

import logging

import pytest

from ane_runner.worker import run_ane_job
from gpu_runner.site_client import SiteClient

JOB = {"evaluation_id": 7, "job_token": "t", "attempt": 1, "problem_slug": "matmul-ane", "problem_source": "x",
       "solution_source": "y", "language": "coreml", "device": "ane", "seed": 3}


@pytest.mark.parametrize("job, reason", [
    (JOB, "job lacks ane: an ANE job is prepared by the site first"),
    ({**JOB, "ane": {}, "attempt": "1"}, "job.attempt must be an integer, not str"),
])
def test_it_drops_a_job_it_cannot_run(job, reason, caplog):
    client = SiteClient("http://127.0.0.1:9", "no-secret")  # nothing answers there: a call would raise
    with caplog.at_level(logging.ERROR, logger="ane_runner.worker"):
        assert run_ane_job(client, job, chip="m4") == "refused"
    client.close()
    assert f"Dropping a malformed ANE job: {reason}" in caplog.text
