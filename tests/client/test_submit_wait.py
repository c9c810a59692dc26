"""`kernelhub submit --wait` follows a real evaluation (the live site, a real cpu runner and the evaluator) of
the problem's honest C++ example through its stages to `accepted`; status and leaderboard then show it."""

import pytest

from tests.client.conftest import EVALUATION_TIMEOUT_S, EXAMPLE_FILE
from tests.client.helpers import assert_progress_in_order, one_json_object, progress_labels, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(EVALUATION_TIMEOUT_S + 300)]


def test_it_shows_each_stage_then_the_verdict_and_exits_0(site, runner_process):
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"],
                             str(EXAMPLE_FILE), "--hardware", "cpu", "--wait", "--wait-timeout",
                             str(EVALUATION_TIMEOUT_S), "--json")
    runner_log = runner_process.log_path.read_text(errors="replace")[-4000:]
    assert code == 0, f"{err}\nRunner log:\n{runner_log}"
    final = one_json_object(out)
    assert final["status"] == "done" and final["verdict"] == "accepted", final
    assert final["problem"] == "gelu-erf-cpu" and final["hardware"] == "cpu" and final["language"] == "cpp"
    assert final["runtime_us"] > 0 and final["eager_us"] > 0 and final["speedup_vs_eager"] > 0
    assert final["statistics"]["verdict"] == "accepted" and final["statistics"]["device"]["kind"] == "cpu"
    # Not a terminal: one plain line per change on stderr, in the evaluator's order. Timing, the longest
    # stage, is always seen (a cached build can pass `compiling` between two polls).
    labels = progress_labels(err)
    assert_progress_in_order(labels)
    assert "timing" in labels, labels

    # The same submission, read back; and the leaderboard now counts it.
    code, out, _ = run_cli("--url", site["url"], "status", str(final["id"]), "--json")
    assert code == 0 and one_json_object(out)["runtime_us"] == final["runtime_us"]
    code, out, _ = run_cli("--url", site["url"], "status", str(final["id"]))
    assert code == 0 and f"#{final['id']} gelu-erf-cpu on cpu: accepted" in out
    assert f"runtime {final['runtime_us']:.1f} us, {final['speedup_vs_eager']:.2f}x vs eager" in out
    assert f"{site['url']}/submissions/{final['id']}/" in out
    code, out, _ = run_cli("--url", site["url"], "leaderboard", "--hardware", "cpu", "--json")
    board = one_json_object(out)
    mine = next(r for r in board["rows"] if r["entrant"] == "Client Agent")
    assert code == 0 and mine["solved"] == 1 and mine["attempted"] == 1 and board["hardware"] == "cpu"
    code, out, _ = run_cli("--url", site["url"], "leaderboard", "--hardware", "cpu", "--level", "1")
    assert code == 0 and "Client Agent" in out and "cpu, level 1" in out
    code, out, _ = run_cli("--url", site["url"], "leaderboard", "--hardware", "cpu", "--level", "2")
    assert code == 0 and "Client Agent" not in out
