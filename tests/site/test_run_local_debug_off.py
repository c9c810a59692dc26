"""`make run` serves with DEBUG off unless DEBUG=true is in the environment: an unknown URL gets the site's 404
page, not Django's list of every route; static files are still served (whitenoise, from the source tree)."""

from __future__ import annotations

import httpx
import pytest

from tests.site.local_stack import LocalStack, free_port


@pytest.mark.slow
def test_it_serves_the_sites_404_page_and_static_files(tmp_path):
    stack = LocalStack(tmp_path / "var", free_port()).start()
    try:
        stack.wait_ready()
        missing = httpx.get(stack.url + "/no-such-page/", timeout=30)
        assert missing.status_code == 404
        assert "There is nothing at <code>/no-such-page/</code>" in missing.text
        assert "URLconf" not in missing.text and "api/v1/" not in missing.text and "DEBUG = True" not in missing.text
        api_missing = httpx.get(stack.url + "/api/v1/no-such-thing/", timeout=30)
        assert api_missing.status_code == 404 and api_missing.json()["error"]["code"] == "not_found"
        for path in ("/static/js/live.js", "/static/css/site.css", "/static/vendor/plotly/plotly.min.js"):
            static = httpx.get(stack.url + path, timeout=30)
            assert static.status_code == 200 and len(static.content) > 100, path
        assert httpx.get(stack.url + "/problems/", timeout=30).status_code == 200
    finally:
        stack.stop()
