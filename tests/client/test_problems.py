"""`kernelhub problems` lists the site's problems, filtered by pool and level like the API."""

import pytest

from tests.client.helpers import one_json_object, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_lists_and_filters_the_problems(site):
    code, out, _ = run_cli("--url", site["url"], "problems", "--json")
    problems = one_json_object(out)["problems"]
    assert code == 0 and [(p["slug"], p["level"], p["hardware"]) for p in problems] == [("gelu-erf-cpu", 1, ["cpu"])]
    code, out, _ = run_cli("--url", site["url"], "problems", "--level", "2", "--json")
    assert code == 0 and one_json_object(out) == {"problems": []}
    code, out, _ = run_cli("--url", site["url"], "problems", "--hardware", "cpu")
    lines = out.splitlines()
    assert lines[0].split() == ["PROBLEM", "LEVEL", "TITLE", "HARDWARE"]
    assert lines[1].split()[:2] == ["gelu-erf-cpu", "1"] and lines[1].split()[-1] == "cpu"
    code, out, _ = run_cli("--url", site["url"], "problems", "--level", "3")
    assert code == 0 and "No problems" in out
