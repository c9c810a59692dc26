"""Jobs on the test run's broker, taken as a runner's Celery worker would take them."""

from __future__ import annotations

import base64
import json
import time


def take_job(evaluation_id: int, queue: str = "pool.cpu", timeout_s: float = 10.0) -> dict:
    """Removes the job message the site sent for evaluation_id from `queue` and returns its `job` kwarg
    (evaluation_id, job_token, ...). Removing it means no real worker of a later test finds a stale job."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_CLIENT_URL)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            for raw in client.lrange(queue, 0, -1):
                message = json.loads(raw)
                body = message["body"]
                if message.get("properties", {}).get("body_encoding") == "base64":
                    body = base64.b64decode(body)
                _args, kwargs, _embed = json.loads(body)
                if kwargs["job"]["evaluation_id"] == evaluation_id:
                    client.lrem(queue, 1, raw)
                    return kwargs["job"]
            time.sleep(0.1)
    finally:
        client.close()
    raise AssertionError(f"No job for evaluation {evaluation_id} on queue {queue} after {timeout_s} s.")
