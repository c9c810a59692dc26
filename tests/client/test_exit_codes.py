"""Each verdict has its exit code, so a script or an RL loop can branch on it without parsing."""

import pytest

from tests.client.conftest import solution
from tests.client.helpers import one_json_object, run_cli
from tests.client.runner_stand_in import play_job

pytestmark = pytest.mark.slow  # starts the live ASGI server


@pytest.mark.parametrize(("verdict", "code"), [("wrong_answer", 1), ("compile_error", 3), ("runtime_error", 3),
                                               ("timeout", 3), ("rejected", 4)])
def test_it_exits_with_the_code_of_the_verdict(site, tmp_path, verdict, code):
    path = tmp_path / "s.py"
    path.write_text(solution(7))
    result = {"verdict": verdict, "correct": False, "runtime_us": None, "eager_us": 100.0, "compile_us": 80.0,
              "speedup_vs_eager": None, "speedup_vs_compile": None, "message": f"why: {verdict}"}
    runner = play_job(site_url=site["url"], runner_secret=site["runner_secret"], result=result, stage_pause=0.2)
    got, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path),
                            "--wait")
    runner.join(timeout=30)
    assert not runner.errors, runner.errors
    assert got == code, err
    assert f"relu-client on cpu: {verdict}" in out and f"why: {verdict}" in out


def test_it_exits_7_when_waiting_gives_up(site, tmp_path):
    path = tmp_path / "s.py"
    path.write_text(solution(8))
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"],
                             str(path), "--wait", "--wait-timeout", "1", "--json")
    assert code == 7
    error = one_json_object(out)["error"]
    assert error["code"] == "wait_timeout" and error["submission"]["status"] == "queued"
    assert "kernelhub status" in err


def test_it_exits_0_for_a_submission_without_wait(site, tmp_path):
    path = tmp_path / "s.py"
    path.write_text(solution(9))
    code, out, _ = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path))
    assert code == 0 and "Submitted #" in out and "kernelhub status" in out
    code, out, _ = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path),
                           "--json")
    assert code == 0 and one_json_object(out)["duplicate"] is True
