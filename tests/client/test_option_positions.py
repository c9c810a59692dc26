"""--url, --token and --retries work before or after the command."""

from tests.client.helpers import one_json_object, run_cli
from tests.client.scripted_server import scripted_server

SUBMISSION = {"id": 3, "problem": "l1-19-relu", "hardware": "cpu", "status": "queued", "stage": "queued"}


def test_it_takes_the_common_options_on_either_side_of_the_command():
    with scripted_server([(200, {}, SUBMISSION)]) as (url, seen):
        for argv in (["--url", url, "--token", "a", "status", "3", "--json"],
                     ["status", "3", "--url", url, "--token", "a", "--json"],
                     ["--url", "http://127.0.0.1:9", "status", "3", "--url", url, "--token", "a", "--json"]):
            code, out, err = run_cli(*argv)
            assert code == 0, err
            assert one_json_object(out)["id"] == 3
    assert [r["path"] for r in seen] == ["/api/v1/submissions/3/"] * 3
    assert all(r["headers"]["Authorization"] == "Token a" for r in seen)
