"""`kernelhub submit --wait` follows a real submission through its stages to the verdict."""

import pytest

from tests.client.conftest import solution
from tests.client.helpers import one_json_object, run_cli
from tests.client.runner_stand_in import play_job

pytestmark = pytest.mark.slow  # starts the live ASGI server

ACCEPTED = {"verdict": "accepted", "correct": True, "runtime_us": 50.0, "eager_us": 100.0, "compile_us": 75.0,
            "speedup_vs_eager": 2.0, "speedup_vs_compile": 1.5, "message": "", "timing": {"n": 40}}


def test_it_shows_each_stage_then_the_verdict_and_exits_0(site, tmp_path):
    path = tmp_path / "relu_solution.py"
    path.write_text(solution(0))
    runner = play_job(site_url=site["url"], runner_secret=site["runner_secret"], result=ACCEPTED)
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", site["problem"],
                             str(path), "--hardware", "cpu", "--wait", "--json")
    runner.join(timeout=30)
    assert not runner.errors, runner.errors
    assert code == 0, err
    final = one_json_object(out)
    assert final["status"] == "done" and final["verdict"] == "accepted"
    assert final["speedup_vs_eager"] == 2.0 and final["problem"] == "relu-client" and final["hardware"] == "cpu"
    # Not a terminal: one plain line per change, in order, on stderr.
    progress = [line.split(": ", 1)[1].rsplit("  ", 1)[0] for line in err.splitlines() if line.startswith("#")]
    assert progress[-1] == "done"
    seen = [p for i, p in enumerate(progress) if i == 0 or p != progress[i - 1]]
    assert seen == progress, "a plain progress line is printed only when the stage changes"
    for stage in ("compiling", "checking correctness", "timing"):
        assert stage in progress, f"{stage} missing from {progress}"
    assert progress.index("compiling") < progress.index("checking correctness") < progress.index("timing")

    # The same submission, read back; and the leaderboard now counts it.
    code, out, _ = run_cli("--url", site["url"], "status", str(final["id"]), "--json")
    assert code == 0 and one_json_object(out)["runtime_us"] == 50.0
    code, out, _ = run_cli("--url", site["url"], "status", str(final["id"]))
    assert "accepted" in out and "50.0 us, 2.00x vs eager, 1.50x vs torch.compile" in out
    code, out, _ = run_cli("--url", site["url"], "leaderboard", "--hardware", "cpu", "--json")
    board = one_json_object(out)
    mine = next(r for r in board["rows"] if r["entrant"] == "Client Agent")
    assert code == 0 and mine["solved"] == 1 and board["hardware"] == "cpu"
    code, out, _ = run_cli("--url", site["url"], "leaderboard", "--hardware", "cpu", "--level", "1")
    assert code == 0 and "Client Agent" in out and "cpu, level 1" in out
