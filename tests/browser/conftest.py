"""Browser tests: headless Debian chromium driven by Playwright's sync API, against the live ASGI server.

Fixtures: `browser` (one chromium per session), `page` (a fresh context per test), `login_page(user)`
(signs a user in by giving the browser a real session cookie), and from tests.live: `live_asgi_server`.
Every test here is marked `browser` and skips, saying why, when /usr/bin/chromium is missing.

Mind: Playwright's sync API runs an event loop in the test's thread, so `async_to_sync` cannot run there and
a live event published from the test body (events.publish_evaluation, any group_send) is dropped (logged).
Change state that must reach the page through the live server instead (the REST API, the runner API).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.live import live_asgi_process, live_asgi_server  # noqa: F401  (fixtures)
from tests.pages.fixtures import alice, alice_agent, alice_submission, bob, cpu_pool, gpu_pool, problem, sam  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Playwright's sync API keeps an asyncio loop in this thread; Django would then refuse ORM calls in the
# test body (SynchronousOnlyOperation) although nothing here runs concurrently with them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[object]:
    # Keep each phase's report on the item, so that `page` can tell at teardown whether the test failed.
    report = yield
    setattr(item, f"report_{report.when}", report)  # type: ignore[attr-defined]
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    # Package scope: Playwright's sync API keeps an event loop running in this thread until it stops, and
    # tests after the browser package call async_to_sync in the same thread.
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing: install Debian's chromium (`make system-packages`, scripts/ensure_system_packages.sh) "
            "to run the browser tests."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(request: pytest.FixtureRequest, browser, live_asgi_server: str) -> Iterator[object]:  # noqa: F811
    context = browser.new_context(base_url=live_asgi_server, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    pg = context.new_page()
    # Surface the page's JavaScript errors in the test's output.
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.js_errors = errors  # type: ignore[attr-defined]
    try:
        yield pg
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            # What the browser showed when the test failed, for whoever reads the CI log.
            from django.conf import settings

            shot = Path(settings.VAR_DIR) / "screenshots" / f"{request.node.name}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(shot), full_page=True)
            print(f"\nScreenshot of the failed page: {shot}\nJavaScript errors: {errors or 'none'}")
    finally:
        context.close()


@pytest.fixture
def login_page(page, live_asgi_server: str) -> Callable[[object], object]:  # noqa: F811
    """login_page(user): the page's browser is now signed in as user (a real session in the test database)."""
    from django.conf import settings
    from django.test import Client

    def login(user: object) -> object:
        client = Client()
        client.force_login(user)  # type: ignore[arg-type]
        session_cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        page.context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": session_cookie, "url": live_asgi_server}]
        )
        return page

    return login
