"""The submission page follows an evaluation live: a runner moves it through its stages over the real runner
API (the job taken from the real broker queue), and headless chromium sees each stage and the verdict appear
without a reload."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.broker import take_job
from tests.pages.fixtures import SOLUTION

RESULT = {
    "verdict": "accepted",
    "correct": True,
    "runtime_us": 412.4,
    "eager_us": 990.0,
    "compile_us": 700.0,
    "speedup_vs_eager": 2.4,
    "speedup_vs_compile": 1.697,
    "message": "",
    "stats": {"n": 87, "mean_us": 413.0, "std_us": 4.1, "median_us": 412.4, "min_us": 398.2, "max_us": 431.0,
              "ci95_us": [405.1, 420.3], "rse": 0.001},
    "baselines": {"eager": {"n": 40, "mean_us": 991.0, "std_us": 9.0, "median_us": 990.0, "min_us": 975.0,
                            "max_us": 1012.0, "ci95_us": [985.0, 996.0], "rse": 0.002}, "compile": None},
    "isolation": {"sandbox": "bubblewrap", "network": "none"},
}


@pytest.fixture
def runner_secret(cpu_pool):
    from apps.devices import services as device_services

    _runner, secret = device_services.runner_create(name="browser-test-runner", pool=cpu_pool)
    return secret


def test_it_shows_stages_and_verdict_live(live_asgi_server, login_page, alice, alice_agent, problem,
                                          runner_secret):
    from apps.submissions import services

    submission, evaluation, _ = services.submission_create(
        entrant=alice_agent, problem_slug=problem.slug, source=SOLUTION, language="cpp", hardware="cpu"
    )
    job = take_job(evaluation.pk)

    page = login_page(alice)
    page.goto(f"/submissions/{submission.pk}/")
    expect(page.locator("#live-indicator")).to_have_attribute("data-state", "open")
    expect(page.locator('[data-stage="queued"]')).to_have_class("is-current")
    expect(page.locator("#solution-source")).to_contain_text("alice-private-kernel-trick")
    # Set on the window: a reload would lose it.
    page.evaluate("window.__not_reloaded = true")

    api = httpx.Client(
        base_url=live_asgi_server,
        headers={"Authorization": f"Runner {runner_secret}", "X-Job-Token": job["job_token"]},
        timeout=10,
    )
    jobs = f"/api/v1/jobs/{evaluation.pk}"
    assert api.post(f"{jobs}/claim/").status_code == 200

    for stage in ("compiling", "checking", "timing"):
        r = api.post(f"{jobs}/stage/", json={"stage": stage})
        assert r.status_code == 200, r.text
        expect(page.locator(f'[data-stage="{stage}"]')).to_have_class("is-current")
        expect(page.locator('[data-stage="queued"]')).to_have_class("is-done")
        expect(page.locator("#verdict-head")).to_contain_text(
            {"compiling": "Compiling", "checking": "Checking correctness", "timing": "Timing"}[stage]
        )

    r = api.post(f"{jobs}/result/", json={"result": RESULT})
    assert r.status_code == 200, r.text
    expect(page.locator("#verdict-head")).to_have_text("Accepted")
    expect(page.locator('[data-stage="verdict"]')).to_have_class("is-done")
    expect(page.locator('[data-stage="verdict"]')).to_have_text("Accepted")
    expect(page.locator('[data-field="runtime_us"]')).to_have_text("412 µs")
    expect(page.locator('[data-field="speedup_vs_eager"]')).to_have_text("2.40×")
    expect(page.locator('[data-field="speedup_vs_compile"]')).to_have_text("1.70×")
    # The statistics come with the refreshed evaluation part (fetched after the final event).
    expect(page.locator("#timing-stats")).to_contain_text("405 µs – 420 µs")
    expect(page.locator("#how-checked [data-section=\"isolation\"]")).to_contain_text("bubblewrap")
    expect(page.locator("#evaluation-live")).to_contain_text("browser-test-runner")

    page.screenshot(path="/tmp/kernelhub-submission-live.png", full_page=True)

    # A re-run asked for by the agent through the REST API: the page switches to the new evaluation.
    # (Over HTTP: in this thread Playwright's event loop keeps async_to_sync, hence group_send, from running.)
    _, agent_token = services.api_token_create(entrant=alice_agent)
    r = httpx.post(f"{live_asgi_server}/api/v1/submissions/", headers={"Authorization": f"Token {agent_token}"},
                   json={"problem": problem.slug, "source": SOLUTION, "hardware": "cpu", "rerun": True}, timeout=10)
    assert r.status_code == 201, r.text
    rerun_id = submission.evaluations.order_by("-pk").values_list("pk", flat=True)[0]
    assert rerun_id != evaluation.pk
    take_job(rerun_id)
    expect(page.locator("#evaluation-live")).to_have_attribute("data-evaluation-id", str(rerun_id))
    expect(page.locator("#verdict-head")).to_have_text("Queued")
    expect(page.locator('[data-stage="queued"]')).to_have_class("is-current")
    expect(page.locator("#all-evaluations tbody tr")).to_have_count(2)

    assert page.evaluate("window.__not_reloaded") is True
    assert page.js_errors == []


def test_it_shows_a_wrong_answer_where_checking_failed(live_asgi_server, page, alice_agent, problem,
                                                       runner_secret):
    from apps.submissions import services

    submission, evaluation, _ = services.submission_create(
        entrant=alice_agent, problem_slug=problem.slug, source=SOLUTION + "\n# v2\n", language="cpp",
        hardware="cpu",
    )
    job = take_job(evaluation.pk)

    # An anonymous visitor: the verdict is public, the source is not.
    page.goto(f"/submissions/{submission.pk}/")
    expect(page.locator("#live-indicator")).to_have_attribute("data-state", "open")
    expect(page.locator("#source-private")).to_be_visible()

    api = httpx.Client(
        base_url=live_asgi_server,
        headers={"Authorization": f"Runner {runner_secret}", "X-Job-Token": job["job_token"]},
        timeout=10,
    )
    jobs = f"/api/v1/jobs/{evaluation.pk}"
    assert api.post(f"{jobs}/claim/").status_code == 200
    assert api.post(f"{jobs}/stage/", json={"stage": "compiling"}).status_code == 200
    assert api.post(f"{jobs}/stage/", json={"stage": "checking"}).status_code == 200
    expect(page.locator('[data-stage="checking"]')).to_have_class("is-current")
    mismatch = "output 0 at index (17,): expected 1.25, got 0.0 (atol 1e-4, rtol 1e-4)"
    r = api.post(f"{jobs}/result/", json={"result": {"verdict": "wrong_answer", "correct": False,
                                                     "message": mismatch, "eager_us": 990.0}})
    assert r.status_code == 200, r.text

    expect(page.locator("#verdict-head")).to_have_text("Wrong answer")
    expect(page.locator('[data-stage="compiling"]')).to_have_class("is-done")
    expect(page.locator('[data-stage="checking"]')).to_have_class("is-failed")
    expect(page.locator('[data-stage="verdict"]')).to_have_text("Wrong answer")
    expect(page.locator('[data-field="message"]')).to_have_text(mismatch)
    expect(page.locator('[data-field="runtime_us"]')).to_have_text("–")
    assert page.js_errors == []
