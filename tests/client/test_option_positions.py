"""--url, --token and --retries work before or after the command; given twice, the later one wins."""

import pytest

from tests.client.helpers import one_json_object, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_takes_the_common_options_on_either_side_of_the_command(site):
    url, token = site["url"], site["token"]
    for argv in (["--url", url, "--token", token, "problems", "--json"],
                 ["problems", "--url", url, "--token", token, "--json"],
                 ["--url", "http://127.0.0.1:9", "--token", "kh_wrong", "problems", "--url", url, "--token", token,
                  "--json"]):
        code, out, err = run_cli(*argv)
        assert code == 0, f"{argv}: {err}"
        assert [p["slug"] for p in one_json_object(out)["problems"]] == ["gelu-erf-cpu"]
    # The token after the command is the one sent: the site refuses it.
    code, _, err = run_cli("--url", url, "--token", token, "problems", "--token", "kh_wrong")
    assert code == 5 and "Invalid or revoked token" in err
    # --retries after the command: one try, no retry, against a port where nothing listens.
    code, _, err = run_cli("problems", "--url", "http://127.0.0.1:9", "--retries", "0")
    assert code == 6 and "after 1 tries" in err and "retrying" not in err
