"""The client retries 5xx (with backoff, or after the Retry-After sent) and connection failures, a bounded
number of times. The site does not answer 5xx on cue, so a small HTTP server of the tests' own plays the
failing site here; 429 and its Retry-After come from the real site (test_rate_limit.py)."""

import io
import json
import socket

from kernelhub_client import Client, NetworkError
from kernelhub_client.cli import EXIT_API_ERROR, EXIT_NETWORK_ERROR, EXIT_OK, main
from tests.client.helpers import run_cli
from tests.client.scripted_server import scripted_server

PROBLEMS = [{"slug": "l1-19-relu", "level": 1, "title": "ReLU", "pools": ["cpu"]}]
MAINTENANCE = {"error": {"code": "unavailable", "message": "Maintenance.", "fields": {}}}


def test_it_waits_the_retry_after_of_a_503_then_succeeds():
    script = [(503, {"Retry-After": "1"}, MAINTENANCE), (200, {}, PROBLEMS)]
    with scripted_server(script) as (url, seen):
        code, out, err = run_cli("--url", url, "--token", "t0k", "problems", "--json")
    assert code == EXIT_OK, err
    assert json.loads(out) == {"problems": PROBLEMS}
    assert len(seen) == 2
    # Retry-After: 1 was honoured, not the first backoff step (0.25-0.5 s).
    assert seen[1]["time"] - seen[0]["time"] >= 0.95
    assert "HTTP 503" in err and "retrying in 1.0 s" in err
    assert seen[0]["headers"]["Authorization"] == "Token t0k"


def test_it_retries_5xx_with_backoff_then_succeeds():
    script = [(503, {}, {"detail": "down"}), (502, {}, {}), (200, {}, PROBLEMS)]
    delays: list[float] = []
    with scripted_server(script) as (url, seen):
        client = Client(url, "t", sleep=delays.append)
        assert client.problems() == PROBLEMS
    assert len(seen) == 3
    # Exponential: the second pause is drawn from a range above the first one's.
    assert len(delays) == 2 and 0.25 <= delays[0] <= 0.5 and 0.5 <= delays[1] <= 1.0


def test_it_gives_up_after_the_retry_budget_with_the_servers_message():
    script = [(503, {}, MAINTENANCE)]
    with scripted_server(script) as (url, seen):
        client = Client(url, "t", max_retries=2, sleep=lambda s: None)
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main(["--url", url, "--retries", "1", "problems", "--json"], stdout=stdout, stderr=stderr)
        assert code == EXIT_API_ERROR
        body = json.loads(stdout.getvalue())
        assert body["error"]["code"] == "unavailable" and body["error"]["status"] == 503
        seen.clear()
        try:
            client.problems()
        except Exception as exc:  # noqa: BLE001 - checked just below
            assert "Maintenance." in str(exc) and "HTTP 503" in str(exc)
        else:
            raise AssertionError("a 503 every time must end in an error")
        assert len(seen) == 3  # one try and two retries


def test_it_retries_connection_errors_then_reports_a_network_error():
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    delays: list[float] = []
    client = Client(f"http://127.0.0.1:{port}", "t", max_retries=3, sleep=delays.append)
    try:
        client.problems()
    except NetworkError as exc:
        assert "Cannot reach" in str(exc) and "4 tries" in str(exc)
    else:
        raise AssertionError("nothing listens there")
    assert len(delays) == 3
    code, out, err = run_cli("--url", f"http://127.0.0.1:{port}", "--retries", "1", "problems", "--json")
    assert code == EXIT_NETWORK_ERROR
    assert json.loads(out)["error"]["code"] == "network"
