"""The Python API: submit, then wait with a callback on every poll, against the live site."""

import pytest

from kernelhub_client import ApiError, Client
from tests.client.conftest import solution
from tests.client.runner_stand_in import play_job

pytestmark = pytest.mark.slow  # starts the live ASGI server


def test_it_submits_and_waits_for_the_verdict(site):
    result = {"verdict": "wrong_answer", "correct": False, "message": "max abs error 3.0 at [5]",
              "eager_us": 10.0, "compile_us": 9.0, "runtime_us": None, "speedup_vs_eager": None,
              "speedup_vs_compile": None}
    runner = play_job(site_url=site["url"], runner_secret=site["runner_secret"], result=result, stage_pause=0.6)
    seen: list[tuple[str, str]] = []
    with Client(site["url"], site["token"]) as client:
        created = client.submit(site["problem"], solution(3), hardware="cpu")
        assert created["status"] == "queued" and created["duplicate"] is False
        final = client.wait(created["id"], timeout=60, poll_min=0.1,
                            on_update=lambda d: seen.append((d["status"], d["stage"])))
        assert client.problem(site["problem"])["reference_source"].startswith("import torch")
        try:
            client.submit(site["problem"], "", hardware="cpu")
        except ApiError as exc:
            assert exc.status == 400 and "source" in exc.fields
        else:
            raise AssertionError("an empty source must be refused")
    runner.join(timeout=30)
    assert not runner.errors, runner.errors
    assert final["verdict"] == "wrong_answer" and final["message"] == "max abs error 3.0 at [5]"
    assert seen[-1] == ("done", "done")
    assert ("running", "compiling") in seen or ("running", "checking") in seen
