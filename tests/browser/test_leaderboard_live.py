"""The leaderboard draws its plots with the vendored plotly.js and follows results live: a runner finishes a
job over the real runner API (the job read from the real broker queue), the site stores the result and
publishes `leaderboard.updated`, and the board's row changes in place, highlighted, without a reload."""

from __future__ import annotations

import base64
import json
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.pages.fixtures import SOLUTION


def _job_from_broker(evaluation_id: int, queue: str = "pool.cpu", timeout_s: float = 10.0) -> dict:
    """The job the site sent to the pool's queue, read as a runner's worker would get it."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_CLIENT_URL)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for raw in client.lrange(queue, 0, -1):
            message = json.loads(raw)
            body = message["body"]
            if message.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            _args, kwargs, _embed = json.loads(body)
            if kwargs["job"]["evaluation_id"] == evaluation_id:
                return kwargs["job"]
        time.sleep(0.1)
    raise AssertionError(f"No job for evaluation {evaluation_id} on queue {queue} after {timeout_s} s.")


@pytest.fixture
def board(cpu_pool, problem, alice_agent):
    """Two entrants with a result each on relu-scale (alice-agent at 1.25x eager, rival-llm at 2x)."""
    from tests.leaderboard.builders import make_entrant, make_problem, result

    other = make_problem("softmax-cpu", pools=(cpu_pool,))
    result(alice_agent, problem, cpu_pool, runtime_us=800, eager_us=1000, compile_us=900)
    rival = make_entrant("rival-llm", "llm")
    result(rival, problem, cpu_pool, runtime_us=500, eager_us=1000, compile_us=900)
    result(rival, other, cpu_pool, verdict="wrong_answer", eager_us=3000, compile_us=3300)
    return cpu_pool


def test_it_draws_plots_and_updates_a_row_live_when_a_result_lands(live_asgi_server, page, board, alice_agent,
                                                                   problem):
    from apps.devices import services as device_services
    from apps.submissions import services

    page.goto("/leaderboard/cpu/")
    # plotly.js (served from static/vendor) drew the fast_p curve: its root svg exists inside the plot div.
    expect(page.locator('[data-figure="fig-fastp-eager"] svg.main-svg').first).to_be_attached()
    expect(page.locator('[data-figure="fig-progress"] svg.main-svg').first).to_be_attached()
    expect(page.locator("#live-state")).to_have_attribute("data-state", "open")

    alice_row = page.locator('#board tr[data-entrant="alice-agent"]')
    geomean = alice_row.locator('[data-field="geomean_speedup_vs_eager"]')
    expect(geomean).to_contain_text("1.25×")
    expect(alice_row.locator('[data-field="rank"]')).to_have_text("2")
    expect(page.locator('#board tr[data-entrant="pytorch-eager"]')).to_contain_text("Baseline")
    page.evaluate("window.__not_reloaded = true")

    # A faster kernel from alice-agent, through the whole path: submit, broker, claim, result.
    _runner, secret = device_services.runner_create(name="leaderboard-runner", pool=board)
    submission, evaluation, _ = services.submission_create(
        entrant=alice_agent, problem_slug=problem.slug, source=SOLUTION + "\n# faster\n", language="cpp",
        hardware="cpu",
    )
    job = _job_from_broker(evaluation.pk)
    api = httpx.Client(base_url=live_asgi_server, timeout=10,
                       headers={"Authorization": f"Runner {secret}", "X-Job-Token": job["job_token"]})
    jobs = f"/api/v1/jobs/{evaluation.pk}"
    assert api.post(f"{jobs}/claim/").status_code == 200
    result = {"verdict": "accepted", "correct": True, "runtime_us": 250.0, "eager_us": 1000.0,
              "compile_us": 900.0, "speedup_vs_eager": 4.0, "speedup_vs_compile": 3.6, "message": ""}
    r = api.post(f"{jobs}/result/", json={"result": result})
    assert r.status_code == 200, r.text

    # The row changed in place: the new best (4x), first place, highlighted.
    expect(geomean).to_contain_text("4.00×")
    expect(alice_row.locator('[data-field="rank"]')).to_have_text("1")
    expect(alice_row).to_have_class("flash")
    expect(page.locator("#board tbody tr").first).to_have_attribute("data-entrant", "alice-agent")
    # The plots are redrawn from the server's fresh figures: alice-agent's progress line has its second step.
    page.wait_for_function(
        """() => {
            const plot = document.querySelector('[data-figure="fig-progress"]');
            const line = plot && plot.data && plot.data.find(t => t.name === "alice-agent");
            return line && line.x.length === 2;
        }""", timeout=15_000)
    expect(page.locator("#problems-section tbody tr").first).to_contain_text("alice-agent 4.00×")
    # Rows whose numbers did not change are not highlighted (the baselines' timings are the same).
    for unchanged in ("rival-llm", "pytorch-eager", "torch-compile"):
        expect(page.locator(f'#board tr[data-entrant="{unchanged}"]')).not_to_have_class("flash")
    assert page.evaluate("window.__not_reloaded") is True
    assert page.js_errors == []
    page.screenshot(path="/tmp/kernelhub-leaderboard-live.png", full_page=True)


def test_it_sorts_columns_and_says_when_a_pool_has_no_results(page, cpu_pool, problem):
    page.goto("/leaderboard/cpu/")
    expect(page.locator(".plot-empty").first).to_contain_text("No accepted results yet")
    expect(page.locator("#board tbody tr")).to_have_count(2)
    page.locator('#board th[data-sort="entrant"]').click()
    expect(page.locator("#board tbody tr").first).to_have_attribute("data-entrant", "pytorch-eager")
    page.locator('#board th[data-sort="entrant"]').click()
    expect(page.locator("#board tbody tr").first).to_have_attribute("data-entrant", "torch-compile")
    assert page.js_errors == []


def test_it_updates_the_problem_board_live(live_asgi_server, page, board, alice_agent, problem):
    from apps.devices import services as device_services
    from apps.submissions import services

    page.goto(f"/leaderboard/cpu/problems/{problem.slug}/")
    expect(page.locator('[data-figure="fig-runtimes"] svg.main-svg').first).to_be_attached()
    expect(page.locator("#live-state")).to_have_attribute("data-state", "open")
    first = page.locator("#problem-board tbody tr").first
    expect(first).to_have_attribute("data-entrant", "rival-llm")
    page.evaluate("window.__not_reloaded = true")

    _runner, secret = device_services.runner_create(name="problem-board-runner", pool=board)
    _submission, evaluation, _ = services.submission_create(
        entrant=alice_agent, problem_slug=problem.slug, source=SOLUTION + "\n# fastest\n", language="cpp",
        hardware="cpu",
    )
    job = _job_from_broker(evaluation.pk)
    api = httpx.Client(base_url=live_asgi_server, timeout=10,
                       headers={"Authorization": f"Runner {secret}", "X-Job-Token": job["job_token"]})
    assert api.post(f"/api/v1/jobs/{evaluation.pk}/claim/").status_code == 200
    r = api.post(f"/api/v1/jobs/{evaluation.pk}/result/", json={"result": {
        "verdict": "accepted", "correct": True, "runtime_us": 100.0, "eager_us": 1000.0, "compile_us": 900.0,
        "speedup_vs_eager": 10.0, "speedup_vs_compile": 9.0, "message": ""}})
    assert r.status_code == 200, r.text

    expect(first).to_have_attribute("data-entrant", "alice-agent")
    expect(first).to_contain_text("10.00×")
    expect(first).to_have_class("flash")
    assert page.evaluate("window.__not_reloaded") is True
    assert page.js_errors == []
