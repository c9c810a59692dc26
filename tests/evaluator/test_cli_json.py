import json
import subprocess
import sys

from tests.evaluator.helpers import FIXTURES

RESULT_FIELDS = {
    "verdict", "correct", "runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile",
    "message", "stats", "baselines", "device", "versions", "isolation", "checks", "language", "problem_hash",
    "solution_hash", "seed", "wall_s",
}


def test_it_prints_exactly_one_json_object_and_exits_zero_on_a_verdict():
    done = subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(FIXTURES / "relu_scale.py"),
         "--solution", str(FIXTURES / "relu_scale_cpp.py"), "--device", "cpu", "--seed", "3", "--json"],
        capture_output=True, text=True, timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)  # the whole of stdout is one object: logs went to stderr
    assert RESULT_FIELDS <= set(result)
    assert result["verdict"] == "accepted", result["message"]
    assert result["correct"] is True
    assert result["seed"] == 3
    assert result["language"] == "cpp"
    assert result["runtime_us"] > 0
    assert result["eager_us"] > 0 and result["compile_us"] > 0
    assert abs(result["speedup_vs_eager"] - result["eager_us"] / result["runtime_us"]) < 1e-6
    stats = result["stats"]
    assert {"n", "mean_us", "std_us", "ci95_us", "min_us", "median_us", "rse"} <= set(stats)
    assert stats["ci95_us"][0] <= stats["median_us"] <= stats["ci95_us"][1]
    assert stats["median_us"] == result["runtime_us"]
    assert {"python", "torch", "evaluator"} <= set(result["versions"])
    assert result["checks"]["trials"] >= 5
    assert "network" in result["isolation"] and "rlimits" in result["isolation"]


def test_it_exits_with_a_usage_error_for_a_missing_file(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(tmp_path / "nope.py"),
         "--solution", str(FIXTURES / "relu_scale_cpp.py"), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "nope.py" in done.stderr


def test_it_exits_with_a_usage_error_for_a_problem_without_model(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def get_inputs():\n    return []\n")
    done = subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(bad),
         "--solution", str(FIXTURES / "relu_scale_cpp.py"), "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "Model" in done.stderr and "get_init_inputs" in done.stderr


def _broken_problem() -> str:
    """The relu_scale fixture, with a get_inputs that raises: no verdict on a solution can be reached."""
    source = (FIXTURES / "relu_scale.py").read_text()
    return source.replace("    return [torch.randn(128, 1024)]",
                          '    raise RuntimeError("this problem cannot make its inputs")')


def test_where_the_evaluator_itself_fails_it_still_prints_one_json_object_and_exits_three(tmp_path):
    # A problem whose get_inputs raises: no verdict on the solution can be reached (an EvaluatorError).
    problem = tmp_path / "broken.py"
    problem.write_text(_broken_problem())
    assert "cannot make its inputs" in problem.read_text()
    done = subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(problem),
         "--solution", str(FIXTURES / "relu_scale_cpp.py"), "--device", "cpu", "--json"],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 3, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["verdict"] is None
    assert result["error"]["kind"] == "evaluator_error"
    assert "the evaluator failed" in result["error"]["message"]
    assert "cannot make its inputs" in done.stderr  # the problem's traceback, on stderr
