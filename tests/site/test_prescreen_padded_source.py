"""A legal solution padded to MAX_SOURCE_BYTES with one long comment line once kept the only runner of its pool
at 100% CPU for 30 minutes inside the pre-screen (a kernelguard regular expression, quadratic in the length of a
line, holding the GIL so that no keep-alive went out), three attempts in a row. With a real runner on the cpu
pool: the pre-screen is reported as the stage `prescreen`, keep-alives go on during it, and it ends within its
bound with a `rejected` verdict that says what to change, in one attempt."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.live import runner_process  # noqa: F401 - the fixture
from tests.site.conftest import PROBLEM_FILE, SOLUTION_SOURCE

# Longer than the runner's keep-alive interval (30 s, JOB_KEEPALIVE_S), so that a keep-alive must go out during it.
PRESCREEN_TIMEOUT_S = 40


@pytest.fixture
def bounded_prescreen(monkeypatch):
    """The runner's pre-screen bound (read by gpu_runner/anticheat.py in the runner's worker)."""
    monkeypatch.setenv("KERNELHUB_PRESCREEN_TIMEOUT_S", str(PRESCREEN_TIMEOUT_S))


@pytest.mark.slow
def test_it_bounds_the_prescreen_of_a_padded_source(bounded_prescreen, live_asgi_server,
                                                    runner_process, embedded_redis, settings):  # noqa: F811
    from apps.submissions.models import Evaluation
    from apps.submissions.problems import problem_load_from_file
    from apps.submissions.services import entrant_create

    problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu"])
    _entrant, token = entrant_create(name="Padding agent", kind="agent")
    head = SOLUTION_SOURCE + "\n# "
    padded = head + "x" * (settings.MAX_SOURCE_BYTES - len(head.encode()) - 1) + "\n"
    assert len(padded.encode()) == settings.MAX_SOURCE_BYTES
    http = httpx.Client(base_url=live_asgi_server, headers={"Authorization": f"Token {token}"}, timeout=30)
    response = http.post("/api/v1/submissions/", json={"problem": "add-one-cpu", "source": padded,
                                                       "language": "cpp"})
    assert response.status_code == 201, response.text
    evaluation_id = response.json()["evaluation_id"]

    deadline = time.monotonic() + 420  # the runner's start (imports, calibration) and the bound, with room
    progress_in_prescreen: set = set()
    prescreen_seen_at = None
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    while time.monotonic() < deadline:
        evaluation = Evaluation.objects.get(pk=evaluation_id)
        if evaluation.stage == "prescreen":
            prescreen_seen_at = prescreen_seen_at or time.monotonic()
            progress_in_prescreen.add(evaluation.last_progress_at)
        if evaluation.status in ("done", "failed"):
            break
        time.sleep(1)
    log = runner_process.log_path.read_text(errors="replace")[-6000:]
    assert evaluation.status == "done", (evaluation.status, evaluation.message, log)
    assert prescreen_seen_at is not None, f"the stage prescreen was never reported. Runner log:\n{log}"
    # A keep-alive moved last_progress_at while the stage stayed prescreen: the runner was not silent.
    assert len(progress_in_prescreen) >= 2, (progress_in_prescreen, log)
    assert evaluation.verdict == "rejected" and evaluation.result.get("rule") == "prescreen_timeout", \
        (evaluation.verdict, evaluation.message)
    assert f"within {PRESCREEN_TIMEOUT_S} s" in evaluation.message
    assert "Break long lines" in evaluation.message and "submit again" in evaluation.message
    assert evaluation.attempt == 1
    spent = (evaluation.finished_at - evaluation.started_at).total_seconds()
    assert spent < PRESCREEN_TIMEOUT_S + 60, spent
    assert evaluation.result["stage_seconds"]["prescreen"] < PRESCREEN_TIMEOUT_S + 10
