"""The pages in Chromium at 1366 px and at phone width (375 px): nothing cut off, the log axis labelled with
real values and 1x marked, the submission page's diagnostics folded, the queue position shown and "Where it ran"
following the runner live, the API docs with a way back and no runner endpoint, the icon served.

Screenshots for docs/screenshots/ are written when KERNELHUB_SCREENSHOTS=1 (see docs/LEADERBOARD.md)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.broker import take_job
from tests.leaderboard.builders import make_entrant, make_problem, result
from tests.pages.fixtures import SOLUTION

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WIDTHS = {"desktop": (1366, 900), "phone": (375, 800)}


def _shot(page, name: str) -> None:
    if os.environ.get("KERNELHUB_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def _no_horizontal_overflow(page) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"


@pytest.fixture
def race(cpu_pool, gpu_pool, problem, alice_agent):
    """Results on the cpu pool spanning 0.2x..4x eager (relu-scale and three more), one problem unmeasured."""
    problems = [problem] + [make_problem(s, pools=(cpu_pool,)) for s in ("softmax-rows", "gelu-erf", "cumsum-rows")]
    make_problem("conv-never-tried", pools=(cpu_pool,))
    make_problem("matmul-h200", pools=(gpu_pool,))  # a GPU problem on a machine without a GPU runner
    llm = make_entrant("Frontier LLM", "llm")
    for i, p in enumerate(problems):
        result(alice_agent, p, cpu_pool, runtime_us=(25, 40, 80, 120)[i], eager_us=100, compile_us=60)
        result(llm, p, cpu_pool, runtime_us=(500, 300, 90, 150)[i], eager_us=100, compile_us=60)
    return cpu_pool


@pytest.mark.parametrize("width", list(WIDTHS))
def test_it_fits_the_board_and_labels_the_log_axis(page, race, width):
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    page.goto("/leaderboard/cpu/", wait_until="domcontentloaded", timeout=60_000)
    board = page.locator("table#board")
    expect(board.locator("th").last).to_have_text("last result")
    if width == "desktop":
        wrap = page.locator(".table-wrap").first
        assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth"), "the board's last column is cut off at 1366 px"
        _shot(page, "board")
    _no_horizontal_overflow(page)
    # The box plot's log axis: real values, each once, and a line at 1x.
    plot = page.locator('[data-figure="fig-distribution"]')
    expect(plot.locator(".ytick text").first).to_be_visible()
    labels = plot.locator(".ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert labels and len(labels) == len(set(labels)), labels
    assert set(labels) <= {"0.1×", "0.2×", "0.5×", "1×", "2×", "5×", "10×"}, labels
    assert {"0.2×", "1×", "2×"} <= set(labels), labels
    expect(plot.get_by_text("1× = as fast as eager")).to_be_visible()
    # Baselines: the unmeasured problem is said so, not counted as a failure; the best time beside the baselines.
    expect(page.locator("#baseline-coverage")).to_contain_text("PyTorch eager on 4 of 5")
    expect(page.locator("#baseline-coverage")).to_contain_text("Conv Never Tried")
    eager_row = page.locator('tr[data-entrant="pytorch-eager"] [data-field="fast_0"]')
    expect(eager_row).to_have_text("100.0%")
    gelu = page.locator("#problems-section tr", has_text="Gelu Erf")
    expect(gelu.locator('[data-field="best"]')).to_contain_text("80.0 µs")
    expect(gelu.locator('[data-field="eager"]')).to_have_text("100 µs")
    cumsum = page.locator("#problems-section tr", has_text="Cumsum Rows")
    expect(cumsum.locator('[data-field="best"]')).to_contain_text("nothing beats eager yet")


@pytest.mark.parametrize("width", list(WIDTHS))
def test_it_opens_home_on_the_race(page, race, width):
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width], strict=True)))
    page.goto("/")
    expect(page.locator('[data-pool="cpu"] .leader')).to_contain_text("alice-agent")
    expect(page.locator('[data-pool="h200"]')).to_contain_text("No runner online for this pool")
    expect(page.locator("#newest")).to_contain_text("Frontier LLM")
    _no_horizontal_overflow(page)
    if width == "desktop":
        _shot(page, "home")
    page.locator("#to-problems").click()
    expect(page.locator("h1")).to_have_text("Problems")


def test_it_shows_the_queue_and_follows_the_runner_live(page, live_asgi_server, cpu_pool, problem, alice_agent):
    from apps.devices import services as device_services
    from apps.submissions import services

    runner, secret = device_services.runner_create(name="browser-queue-runner", pool=cpu_pool)
    api = httpx.Client(base_url=live_asgi_server, headers={"Authorization": f"Runner {secret}"}, timeout=10)
    assert api.post("/api/v1/runners/heartbeat/", json={}).status_code in (200, 201, 204)
    first, first_eval, _ = services.submission_create(entrant=alice_agent, problem_slug=problem.slug,
                                                      source=SOLUTION, language="cpp", hardware="cpu")
    second, second_eval, _ = services.submission_create(entrant=alice_agent, problem_slug=problem.slug,
                                                        source=SOLUTION + "\n# v2\n", language="cpp",
                                                        hardware="cpu")
    page.goto(f"/submissions/{second.pk}/")
    expect(page.locator("#queue-position")).to_contain_text("Position 2 in the cpu queue")
    expect(page.locator('[data-field="runner"]')).to_contain_text("not claimed yet")

    job = take_job(second_eval.pk)
    jobs = f"/api/v1/jobs/{second_eval.pk}"
    api.headers["X-Job-Token"] = job["job_token"]
    assert api.post(f"{jobs}/claim/").status_code == 200
    expect(page.locator('[data-field="runner"]')).to_have_text("browser-queue-runner")
    expect(page.locator("#queue-position")).to_have_count(0)
    r = api.post(f"{jobs}/stage/", json={"stage": "compiling"})
    assert r.status_code == 200, r.text
    expect(page.locator('[data-stage="compiling"]')).to_have_class("is-current")
    expect(page.locator('[data-field="started"]')).to_contain_text("in the queue")
    _shot(page, "submission")


def test_it_serves_api_docs_with_a_way_back_and_the_icon(page, live_asgi_server):
    page.goto("/api/docs/")
    expect(page.locator("#back-to-site")).to_be_visible()
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    paths = page.locator(".opblock-summary-path").evaluate_all("els => els.map(e => e.textContent)")
    assert paths and not [p for p in paths if "/jobs/" in p or "/runners/" in p], paths
    page.locator("#back-to-site").click()
    expect(page.locator("h1")).to_contain_text("fastest kernels")
    assert httpx.get(f"{live_asgi_server}/favicon.ico", follow_redirects=True).status_code == 200
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert httpx.get(f"{live_asgi_server}{icon}").status_code == 200
