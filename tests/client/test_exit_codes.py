"""Each verdict has its exit code, so a script or an RL loop can branch on it without parsing. The verdicts
come from real evaluations: the live site, a real cpu runner and the evaluator."""

import pytest

from tests.client.conftest import COMPILE_ERROR, EVALUATION_TIMEOUT_S, REJECTED, WRONG_ANSWER, solution
from tests.client.helpers import assert_progress_in_order, one_json_object, progress_labels, run_cli

pytestmark = pytest.mark.slow  # starts the live ASGI server


@pytest.mark.timeout(EVALUATION_TIMEOUT_S + 300)
@pytest.mark.parametrize(("source", "verdict", "code", "says"), [
    (WRONG_ANSWER, "wrong_answer", 1, "worst at index"),
    (COMPILE_ERROR, "compile_error", 3, "kh_gelu_erf_cpu_broken"),
    (REJECTED, "rejected", 4, "no custom kernel found"),
], ids=["wrong_answer", "compile_error", "rejected"])
def test_it_exits_with_the_code_of_the_verdict(site, runner_process, tmp_path, source, verdict, code, says):
    path = tmp_path / "solution.py"
    path.write_text(source)
    got, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"], str(path),
                            "--wait", "--wait-timeout", str(EVALUATION_TIMEOUT_S), "--json")
    runner_log = runner_process.log_path.read_text(errors="replace")[-4000:]
    final = one_json_object(out)
    assert got == code, f"{final}\n{err}\nRunner log:\n{runner_log}"
    assert final["status"] == "done" and final["verdict"] == verdict and final["runtime_us"] is None
    assert says in final["message"], final["message"]
    labels = progress_labels(err)
    assert_progress_in_order(labels)
    if verdict == "compile_error":
        assert "compiling" in labels, labels  # the compiler takes many seconds to refuse it

    # `status` in words: the verdict and the evaluator's message. Compiler output and rejection details can
    # quote the source: without the owner's token the site withholds them, and the client says so.
    got, out, _ = run_cli("--url", site["url"], "--token", site["token"], "status", str(final["id"]))
    assert got == 0 and f"#{final['id']} gelu-erf-cpu on cpu: {verdict}" in out and says in out
    got, out, _ = run_cli("--url", site["url"], "status", str(final["id"]))
    assert got == 0 and f"#{final['id']} gelu-erf-cpu on cpu: {verdict}" in out
    if verdict != "wrong_answer":
        assert says not in out and "shown to the entrant's owner only" in out


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
