"""The Python API: submit, then wait with a callback on every poll, against the live site and a real cpu
runner; the verdict is the evaluator's (a runtime error raised by the solution's own C++ check)."""

import pytest

from kernelhub_client import ApiError, Client
from tests.client.conftest import EVALUATION_TIMEOUT_S, RUNTIME_ERROR

pytestmark = [pytest.mark.slow, pytest.mark.timeout(EVALUATION_TIMEOUT_S + 300)]


def test_it_submits_and_waits_for_the_verdict(site, runner_process):
    seen: list[tuple[str, str]] = []
    with Client(site["url"], site["token"]) as client:
        created = client.submit(site["problem"], RUNTIME_ERROR, hardware="cpu")
        assert created["status"] == "queued" and created["duplicate"] is False
        final = client.wait(created["id"], timeout=EVALUATION_TIMEOUT_S, poll_min=0.1, poll_max=0.25,
                            on_update=lambda d: seen.append((d["status"], d["stage"])))
        assert client.problem(site["problem"])["reference_source"].startswith('"""GELU')
        with pytest.raises(ApiError) as refused:
            client.submit(site["problem"], "", hardware="cpu")
        assert refused.value.status == 400 and "source" in refused.value.fields
    runner_log = runner_process.log_path.read_text(errors="replace")[-4000:]
    assert final["verdict"] == "runtime_error", f"{final}\nRunner log:\n{runner_log}"
    assert "must be float32" in final["message"] and final["runtime_us"] is None
    assert seen[0][0] == "queued" and seen[-1] == ("done", "done")
    # Every poll reached the callback, in the lifecycle's order. A fast runner can go from queued to done
    # between two polls, so seeing `running` is not required (CI once missed it with a 2.5 s interval).
    order = {"queued": 0, "running": 1, "done": 2}
    ranks = [order[status] for status, _ in seen]
    assert ranks == sorted(ranks), seen
