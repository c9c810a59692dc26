"""static/js/live.js reconnects: the server goes away and comes back (a deploy, a proxy restart), and the
submission page follows the evaluation again without a reload."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.browser.broker import take_job
from tests.live import new_live_server
from tests.pages.fixtures import SOLUTION


def test_it_reconnects_after_the_server_restarts(transactional_db, django_db_blocker, page, alice_agent, problem):
    from apps.devices import services as device_services
    from apps.submissions import services

    _runner, secret = device_services.runner_create(name="reconnect-runner", pool=problem.pools.get())
    submission, evaluation, _ = services.submission_create(
        entrant=alice_agent, problem_slug=problem.slug, source=SOLUTION, language="cpp", hardware="cpu"
    )
    job = take_job(evaluation.pk)

    server = new_live_server(django_db_blocker)  # its own server, so that stopping it harms no other test
    server.start()
    try:
        page.goto(f"{server.url}/submissions/{submission.pk}/")
        indicator = page.locator("#live-indicator")
        expect(indicator).to_have_attribute("data-state", "open")
        page.evaluate("window.__not_reloaded = true")

        server.stop()
        expect(indicator).to_have_attribute("data-state", "closed")
        expect(indicator).to_have_text("reconnecting…")

        server.start()  # same port
        expect(indicator).to_have_attribute("data-state", "open", timeout=30_000)

        api = httpx.Client(base_url=server.url, timeout=10,
                           headers={"Authorization": f"Runner {secret}", "X-Job-Token": job["job_token"]})
        assert api.post(f"/api/v1/jobs/{evaluation.pk}/claim/").status_code == 200
        assert api.post(f"/api/v1/jobs/{evaluation.pk}/stage/", json={"stage": "compiling"}).status_code == 200
        expect(page.locator('[data-stage="compiling"]')).to_have_class("is-current")
        assert page.evaluate("window.__not_reloaded") is True
    finally:
        server.stop()
