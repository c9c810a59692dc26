"""A submission through the API -> Celery -> a real runner (`python -m gpu_runner serve`, a Celery worker on
pool.cpu running the evaluator) -> the result over HTTP -> websocket events. Nothing is faked: the live ASGI
server, the broker and channel layer (embedded Redis, or REDIS_URL in CI), the database (a SQLite file, or
DATABASE_URL in CI) are the ones the site runs on.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests.live import runner_process  # noqa: F401 - the fixture
from tests.site.conftest import PROBLEM_FILE, SOLUTION_SOURCE

# A cold C++ build (about 60 s on 2 cores) plus torch.compile's baseline and the timing runs.
EVALUATION_TIMEOUT_S = 600


def _ws(base_url: str, path: str):
    return connect(base_url.replace("http://", "ws://") + path, origin=base_url, open_timeout=10)


def _next_event(ws, deadline: float) -> dict | None:
    try:
        return json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
    except TimeoutError:
        return None


@pytest.mark.slow
def test_it_evaluates_a_submission_end_to_end(live_asgi_server, runner_process,  # noqa: F811 - imported
                                              embedded_redis):
    from apps.submissions.problems import problem_load_from_file
    from apps.submissions.services import entrant_create

    problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu"])
    _entrant, token = entrant_create(name="E2E agent", kind="agent")
    base = live_asgi_server
    http = httpx.Client(base_url=base, headers={"Authorization": f"Token {token}"}, timeout=30)

    with _ws(base, "/ws/leaderboard/cpu/") as board:
        response = http.post("/api/v1/submissions/", json={"problem": "add-one-cpu", "source": SOLUTION_SOURCE})
        assert response.status_code == 201, response.text
        submission_id = response.json()["id"]
        evaluation_id = response.json()["evaluation_id"]

        deadline = time.monotonic() + EVALUATION_TIMEOUT_S
        seen_stages: list[str] = []
        final = None
        with _ws(base, f"/ws/submissions/{submission_id}/") as ws:
            while final is None and time.monotonic() < deadline:
                event = _next_event(ws, deadline)
                if event is None:
                    break
                assert event["type"] == "evaluation.update"
                evaluation = event["evaluation"]
                assert evaluation["id"] == evaluation_id
                seen_stages.append(evaluation["stage"])
                if evaluation["status"] in ("done", "failed"):
                    final = evaluation
        runner_log = runner_process.log_path.read_text(errors="replace")[-6000:]
        assert final is not None, f"No final event within {EVALUATION_TIMEOUT_S} s; stages {seen_stages}. " \
                                  f"Runner log:\n{runner_log}"
        assert final["status"] == "done" and final["verdict"] == "accepted", (final, runner_log)
        assert final["runtime_us"] > 0 and final["eager_us"] > 0 and final["speedup_vs_eager"] > 0
        # Live stages arrived in the evaluator's order (a cached build can pass `compiling` before the page
        # connects; timing, the longest, is always seen).
        order = ["queued", "prescreen", "compiling", "checking", "timing", "done"]
        assert [order.index(s) for s in seen_stages] == sorted(order.index(s) for s in seen_stages), seen_stages
        assert "timing" in seen_stages and seen_stages[-1] == "done", seen_stages

        # The leaderboard was told.
        board_event = _next_event(board, time.monotonic() + 10)
    assert board_event == {"type": "leaderboard.updated", "pool": "cpu", "problem": "add-one-cpu",
                           "entrant": "e2e-agent", "evaluation_id": evaluation_id}

    # And the API serves the stored result, with the evaluator's object as is.
    body = http.get(f"/api/v1/submissions/{submission_id}/").json()
    assert body["status"] == "done" and body["verdict"] == "accepted" and body["attempt"] == 1
    assert body["runtime_us"] == final["runtime_us"]
    assert body["statistics"]["verdict"] == "accepted" and body["statistics"]["device"]["kind"] == "cpu"

    # A stale message for the same job (a re-queue left the old one in the queue) is dropped by the runner:
    # its token does not claim the finished job, and nothing changes.
    from kernelhub.celery import app as site_app

    stale = {"evaluation_id": evaluation_id, "job_token": "a-rotated-token", "attempt": 1,
             "problem_slug": "add-one-cpu", "problem_source": PROBLEM_FILE.read_text(),
             "solution_source": "class ModelNew: pass\n", "language": "cpp", "device": "cpu", "seed": 1}
    site_app.send_task("gpu_runner.evaluate_job", kwargs={"job": stale}, queue="pool.cpu")
    drop_deadline = time.monotonic() + 120
    while f"Job {evaluation_id} not claimed" not in runner_process.log_path.read_text(errors="replace"):
        assert time.monotonic() < drop_deadline, runner_process.log_path.read_text(errors="replace")[-4000:]
        time.sleep(0.5)
    after = http.get(f"/api/v1/submissions/{submission_id}/").json()
    assert after["status"] == "done" and after["runtime_us"] == body["runtime_us"] and after["attempt"] == 1

    # The runner's heartbeat reached the devices app.
    from apps.devices.models import Runner

    runner = Runner.objects.get(name="e2e-cpu")
    assert runner.last_heartbeat_at is not None
    assert runner.telemetry["workers"][0]["alive"] is True
