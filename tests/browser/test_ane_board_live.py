"""The ANE board follows a Mac's result live: the empty state turns into the ranked table without a reload.
A result is posted over the live server's runner API, as a Mac runner posts it."""
# ruff: noqa: F811

from playwright.sync_api import expect

from tests.ane.site import POOL, ane_pool, ane_problem, broker_queue, mac_runner  # noqa: F401
from tests.leaderboard.ane_results import accepted, mac_posts_over_http


def test_the_ane_board_turns_live_from_empty_to_ranked(live_asgi_server, page, ane_problem, mac_runner, alice_agent,
                                                     broker_queue):
    _runner, secret = mac_runner
    page.goto(f"/leaderboard/{POOL}/")
    expect(page.locator("#live-state")).to_have_attribute("data-state", "open")
    expect(page.locator("#ane-empty")).to_be_visible()
    page.evaluate("window.__not_reloaded = true")

    mac_posts_over_http(live_asgi_server, secret, alice_agent, ane_problem, accepted(
        10**9, runtime_us=200.0, coreml_us=500.0, coreml_cpu_us=4000.0, op_share=1.0, cost_share=0.9))

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
