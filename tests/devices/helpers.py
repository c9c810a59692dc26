"""Helpers of the devices tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import time
from typing import Any


def heartbeat(api: Any, secret: str, **telemetry: Any) -> dict:
    response = api(runner=secret).post("/api/v1/runners/heartbeat/", {"host_info": {"hostname": "node"},
                                                                      "telemetry": telemetry}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def claimed_job(*, problem: Any, alice: Any, runners: Any, api: Any, redis_queue: Any, capture: Any,
                runner: str = "cpu-1") -> tuple[Any, dict]:
    """A submission dispatched for real (its message read off the broker) and claimed by `runner`."""
    from apps.submissions.models import Evaluation
    from tests.site.conftest import submit

    with capture(execute=True):
        body = submit(api(alice.token)).json()
    job = redis_queue("pool.cpu")[0]["kwargs"]["job"]
    redis_queue.client.delete("pool.cpu")
    client = api(runner=runners[runner].secret)
    response = client.post(f"/api/v1/jobs/{job['evaluation_id']}/claim/", HTTP_X_JOB_TOKEN=job["job_token"])
    assert response.status_code == 200, response.content
    return Evaluation.objects.get(pk=body["evaluation_id"]), job


def wait_for(what: str, check: Any, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")
