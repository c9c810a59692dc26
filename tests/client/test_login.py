"""`kernelhub login` checks and stores the URL and token (mode 0600); the environment overrides them."""

import json
import stat

import pytest

from tests.client.helpers import one_json_object, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_stores_a_checked_login_privately_and_uses_it(site, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("KERNELHUB_URL", raising=False)
    monkeypatch.delenv("KERNELHUB_TOKEN", raising=False)
    code, out, err = run_cli("login", "--url", site["url"] + "/", "--token", site["token"])
    assert code == 0, err
    path = tmp_path / "config" / "kernelhub" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"url": site["url"], "token": site["token"]}
    assert str(path) in out

    code, out, _ = run_cli("problems", "--json")
    assert code == 0
    assert [p["slug"] for p in one_json_object(out)["problems"]] == ["gelu-erf-cpu"]
    code, out, _ = run_cli("problems")
    assert "gelu-erf-cpu" in out and "cpu" in out and out.startswith("PROBLEM")

    # The environment wins over the stored login.
    monkeypatch.setenv("KERNELHUB_URL", "http://127.0.0.1:9")
    code, out, err = run_cli("--retries", "0", "problems", "--json")
    assert code == 6 and "127.0.0.1:9" in err


def test_it_refuses_a_bad_token_and_stores_nothing(site, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, _, err = run_cli("login", "--url", site["url"], "--token", "kh_wrong")
    assert code == 5 and "Invalid or revoked token" in err
    assert not (tmp_path / "config" / "kernelhub" / "config.json").exists()
