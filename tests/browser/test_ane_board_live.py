"""The ANE board follows a Mac's result live: the empty state turns into the ranked table without a reload.
A result is posted over the live server's runner API, as a Mac runner posts it."""
# ruff: noqa: F811

import httpx
from playwright.sync_api import expect

from tests.ane.site import POOL, ane_pool, ane_problem, broker_queue, mac_runner  # noqa: F401
from tests.leaderboard.ane_results import BUILDER, accepted


def test_the_ane_board_turns_live_from_empty_to_ranked(live_asgi_server, page, ane_problem, mac_runner, alice_agent,
                                                     broker_queue):
    from apps.submissions import services
    from apps.submissions.models import Evaluation

    _runner, secret = mac_runner
    # Dispatch by hand (no site worker here): the job's token set as dispatch would rotate it.
    _submission, evaluation, _ = services.submission_create(
        entrant=alice_agent, problem_slug=ane_problem.slug, source=BUILDER, language="coreml", hardware=POOL)
    token = f"browser-token-{evaluation.pk}"
    Evaluation.objects.filter(pk=evaluation.pk).update(job_token_hash=services.token_hash(token), attempt=1,
                                                       status=Evaluation.STATUS_QUEUED)

    page.goto(f"/leaderboard/{POOL}/")
    expect(page.locator("#live-state")).to_have_attribute("data-state", "open")
    expect(page.locator("#ane-empty")).to_be_visible()
    page.evaluate("window.__not_reloaded = true")

    api = httpx.Client(base_url=live_asgi_server, timeout=10,
                       headers={"Authorization": f"Runner {secret}", "X-Job-Token": token})
    jobs = f"/api/v1/jobs/{evaluation.pk}"
    assert api.post(f"{jobs}/claim/").status_code == 200
    r = api.post(f"{jobs}/result/", json={"result": accepted(10**9, runtime_us=200.0, coreml_us=500.0,
                                                              coreml_cpu_us=4000.0, op_share=1.0, cost_share=0.9)})
    assert r.status_code == 200, r.text

    row = page.locator('#ane-board tr[data-entrant="alice-agent"]')
    expect(row.locator('[data-field="geomean_speedup_vs_coreml"]')).to_contain_text("2.50× (1)")
    expect(row).to_have_class("flash")
    expect(page.locator("#ane-empty")).to_have_count(0)
    entry = page.locator('#ane-problem-pointwise-conv-relu-ane tr[data-entrant="alice-agent"]')
    expect(entry.locator('[data-field="runtime_us"]')).to_have_text("200 µs")
    expect(entry).to_have_class("flash")
    assert page.evaluate("window.__not_reloaded") is True
    assert page.js_errors == []
    page.screenshot(path="/tmp/kernelhub-ane-board-live.png", full_page=True)
