"""The API's errors come out as clear messages (and one JSON object with --json) with exit code 5;
usage errors exit 2."""

import pytest

from tests.client.conftest import solution
from tests.client.helpers import one_json_object, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_explains_a_refused_token(site, tmp_path):
    path = tmp_path / "s.py"
    path.write_text(solution(1))
    code, out, err = run_cli("--url", site["url"], "--token", "kh_not-a-token", "submit", site["problem"],
                             str(path), "--json")
    assert code == 5
    error = one_json_object(out)["error"]
    assert error["status"] == 401
    assert "Check your token" in err and "kernelhub login" in err


def test_it_shows_the_fields_of_a_validation_error(site, tmp_path):
    path = tmp_path / "s.py"
    path.write_text(solution(1))
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", "no-such-problem",
                             str(path), "--json")
    assert code == 5
    error = one_json_object(out)["error"]
    assert error["code"] == "unknown_problem" and "problem" in error["fields"]
    assert "Unknown problem 'no-such-problem'" in err and "problem: No such problem." in err


def test_it_reports_an_unknown_submission(site):
    code, out, err = run_cli("--url", site["url"], "status", "999999", "--json")
    assert code == 5 and one_json_object(out)["error"]["status"] == 404
    assert "No submission 999999" in err


def test_it_exits_2_on_usage_errors(site, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("KERNELHUB_URL", raising=False)
    code, out, err = run_cli("problems", "--json")
    assert code == 2 and "kernelhub login" in one_json_object(out)["error"]["message"]
    code, _, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"],
                           str(tmp_path / "missing.py"))
    assert code == 2 and "No such file" in err
    code, _, err = run_cli("--url", "ftp://example", "problems")
    assert code == 2 and "must start with http://" in err
    with pytest.raises(SystemExit) as exc:
        run_cli("submit")
    assert exc.value.code == 2
