"""Site-side fixtures of the ANE track: an `m4-ane` pool with a Mac runner, the bundled pointwise problem on
it, alice's entrant and token, and the broker's real queues. Imported by the tests that need the database.

alice owns an agent entrant; `mac-1` is a runner of pool m4-ane (its secret kept in clear, as the Mac holds it).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.ane.helpers import POINTWISE

POOL = "m4-ane"
PREPARE_QUEUE = "ane-prepare"  # settings.ANE_PREPARE_QUEUE: where dispatch sends an ANE job first
POOL_QUEUE = f"pool.{POOL}"


@dataclass
class Actor:
    user: Any
    entrant: Any
    token: str


@pytest.fixture
def ane_pool(db):
    from apps.devices.services import pool_get_or_create

    pool, _ = pool_get_or_create(slug=POOL)
    return pool


@pytest.fixture
def mac_runner(ane_pool):
    from apps.devices.services import runner_create

    runner, secret = runner_create(name="mac-1", pool=ane_pool)
    return runner, secret


@pytest.fixture
def ane_problem(ane_pool):
    from apps.submissions.problems import problem_load_from_file

    problem, _ = problem_load_from_file(path=POINTWISE, hardware=[POOL])
    return problem


@pytest.fixture
def alice(db) -> Actor:
    from django.contrib.auth import get_user_model

    from apps.submissions.services import entrant_create

    user = get_user_model().objects.create_user(username="alice", password="a-long-password-1")
    entrant, token = entrant_create(name="Alice's agent", kind="agent", owner=user)
    return Actor(user=user, entrant=entrant, token=token)


@pytest.fixture
def api():
    """`api(token)` for an entrant, `api(runner=secret)` for a runner: DRF test clients."""
    from rest_framework.test import APIClient

    def make(token: str | None = None, *, runner: str | None = None) -> APIClient:
        client = APIClient()
        if token:
            client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        if runner:
            client.credentials(HTTP_AUTHORIZATION=f"Runner {runner}")
        return client

    return make


@pytest.fixture
def broker_queue(embedded_redis, settings):
    """Reads the messages Celery really sent to a queue of the test run's broker (emptied before and after)."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_CLIENT_URL)

    def messages(queue: str) -> list[dict]:
        out = []
        for raw in client.lrange(queue, 0, -1):
            envelope = json.loads(raw)
            body = envelope["body"]
            if envelope.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            _args, kwargs, _embed = json.loads(body)
            out.append({"task": envelope["headers"]["task"], "kwargs": kwargs})
        return out

    for queue in (PREPARE_QUEUE, POOL_QUEUE):
        client.delete(queue)
    yield messages
    for queue in (PREPARE_QUEUE, POOL_QUEUE):
        client.delete(queue)  # no stale job for a real worker of a later test
    client.close()


def submit(client: Any, source: str, **body: Any) -> Any:
    return client.post("/api/v1/submissions/", {"problem": "pointwise-conv-relu-ane", "hardware": POOL,
                                                "source": source, **body}, format="json")
