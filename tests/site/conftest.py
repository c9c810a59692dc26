"""Actors and fixtures of the site's tests.

alice owns entrant A (an agent), bob owns entrant B (an LLM), charlie owns nothing. Pools: `cpu` (cpp) and
`h200` (cuda, triton, cupy). Problem `add-one-cpu` is offered on cpu. Runners: `cpu-1` and `cpu-2` on cpu,
`h200-1` on h200. Tokens and secrets are kept in clear on the fixtures, as a client would hold them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.live import live_asgi_process, live_asgi_server  # noqa: F401

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBLEM_FILE = FIXTURES / "add_one_cpu.py"
SOLUTION_SOURCE = (FIXTURES / "add_one_cpu_solution.py").read_text()


@dataclass
class Actor:
    user: Any
    entrant: Any
    token: str


@dataclass
class RunnerIdentity:
    runner: Any
    secret: str


@pytest.fixture
def pools(db):
    from apps.devices.services import pool_get_or_create

    cpu, _ = pool_get_or_create(slug="cpu")
    h200, _ = pool_get_or_create(slug="h200")
    return {"cpu": cpu, "h200": h200}


@pytest.fixture
def problem(pools):
    from apps.submissions.problems import problem_load_from_file

    problem, _ = problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu"])
    return problem


def _actor(name: str, kind: str) -> Actor:
    from django.contrib.auth import get_user_model

    from apps.submissions.services import entrant_create

    user = get_user_model().objects.create_user(username=name.lower(), password="a-long-password-1")
    entrant, token = entrant_create(name=f"{name}'s agent", kind=kind, owner=user)
    return Actor(user=user, entrant=entrant, token=token)


@pytest.fixture
def alice(db) -> Actor:
    return _actor("Alice", "agent")


@pytest.fixture
def bob(db) -> Actor:
    return _actor("Bob", "llm")


@pytest.fixture
def charlie(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username="charlie", password="a-long-password-1")


def _runner(name: str, pool: Any) -> RunnerIdentity:
    from apps.devices.services import runner_create

    runner, secret = runner_create(name=name, pool=pool)
    return RunnerIdentity(runner=runner, secret=secret)


@pytest.fixture
def runners(pools) -> dict[str, RunnerIdentity]:
    return {"cpu-1": _runner("cpu-1", pools["cpu"]), "cpu-2": _runner("cpu-2", pools["cpu"]),
            "h200-1": _runner("h200-1", pools["h200"])}


@pytest.fixture
def api():
    """A DRF test client; `api(token)` / `api(runner=secret)` give authenticated ones."""
    from rest_framework.test import APIClient

    def make(token: str | None = None, *, runner: str | None = None) -> APIClient:
        client = APIClient()
        if token:
            client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        if runner:
            client.credentials(HTTP_AUTHORIZATION=f"Runner {runner}")
        return client

    return make


def submit(client: Any, **body: Any) -> Any:
    body.setdefault("problem", "add-one-cpu")
    body.setdefault("source", SOLUTION_SOURCE)
    return client.post("/api/v1/submissions/", body, format="json")


def claimed_job(*, problem: Any, alice: Any, runners: Any, api: Any, redis_queue: Any, capture: Any,
                runner: str = "cpu-1") -> tuple[Any, dict]:
    """A submission dispatched for real (its message read off the broker) and claimed by `runner`."""
    from apps.submissions.models import Evaluation

    with capture(execute=True):
        body = submit(api(alice.token)).json()
    job = redis_queue("pool.cpu")[0]["kwargs"]["job"]
    redis_queue.client.delete("pool.cpu")
    client = api(runner=runners[runner].secret)
    response = client.post(f"/api/v1/jobs/{job['evaluation_id']}/claim/", HTTP_X_JOB_TOKEN=job["job_token"])
    assert response.status_code == 200, response.content
    return Evaluation.objects.get(pk=body["evaluation_id"]), job


@pytest.fixture
def claimed(problem, alice, runners, api, redis_queue, django_capture_on_commit_callbacks):
    """(evaluation, job, runner cpu-1's client): a job sent through the real dispatch and claimed by cpu-1 with
    the token from the message."""
    evaluation, job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                  capture=django_capture_on_commit_callbacks)
    return evaluation, job, api(runner=runners["cpu-1"].secret)


def queued_job(evaluation: Any) -> str:
    """Rotate a queued evaluation's token as dispatch would (without a broker) and return the clear token."""
    from apps.submissions.models import Evaluation, token_hash

    token = f"test-token-{evaluation.pk}-{evaluation.attempt + 1}"
    Evaluation.objects.filter(pk=evaluation.pk).update(job_token_hash=token_hash(token),
                                                       attempt=evaluation.attempt + 1)
    evaluation.refresh_from_db()
    return token


def error_of(response: Any) -> dict:
    """The one error shape; fails the test when the body has another."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "fields"}, body
    assert body["error"]["message"], body
    return body["error"]


@pytest.fixture
def redis_queue(embedded_redis, settings):
    """Reads (and empties first) a pool's queue on the test run's broker: the real messages Celery sent."""
    import base64
    import json

    import redis

    url = settings.REDIS_CLIENT_URL
    client = redis.Redis.from_url(url)

    def messages(queue: str) -> list[dict]:
        out = []
        for raw in client.lrange(queue, 0, -1):
            envelope = json.loads(raw)
            body = base64.b64decode(envelope["body"]) if envelope.get("properties", {}).get(
                "body_encoding") == "base64" else envelope["body"]
            args, kwargs, _embed = json.loads(body)
            out.append({"task": envelope["headers"]["task"], "kwargs": kwargs})
        return out

    for queue in ("pool.cpu", "pool.h200"):
        client.delete(queue)
    messages.client = client  # type: ignore[attr-defined]
    yield messages
    for queue in ("pool.cpu", "pool.h200"):
        client.delete(queue)  # no stale job for a real worker of a later test
    client.close()
