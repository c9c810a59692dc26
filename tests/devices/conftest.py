"""Actors of the devices tests: the site tests' pools, runners (cpu-1, cpu-2 on cpu; h200-1 on h200), alice
(an agent's owner) and the API client; sam is staff, charlie is a signed-in user without staff rights."""

from __future__ import annotations

import pytest

from tests.site.conftest import (  # noqa: F401
    alice,
    api,
    charlie,
    live_asgi_process,
    live_asgi_server,
    pools,
    problem,
    redis_queue,
    runners,
)


@pytest.fixture
def sam(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username="sam", password="a-long-password-1", is_staff=True)


@pytest.fixture
def staff_client(client, sam):
    client.force_login(sam)
    return client


def heartbeat(api, secret: str, **telemetry) -> dict:  # type: ignore[no-untyped-def]
    response = api(runner=secret).post("/api/v1/runners/heartbeat/", {"host_info": {"hostname": "node"},
                                                                      "telemetry": telemetry}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def claimed_job(*, problem, alice, runners, api, redis_queue, capture, runner: str = "cpu-1"):  # type: ignore[no-untyped-def]
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
