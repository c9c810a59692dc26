"""The evaluator builds its answer as an EvaluationResult (gpu_runner/result.py): typed figures, the checks' record,
and to_json(), the object the CLI prints and a runner posts, which the site's side of the contract accepts."""

import pytest

from gpu_runner.contract import Result
from gpu_runner.result import EvaluationResult

KEYS = [
    "verdict", "correct", "runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile",
    "kernel_time_us", "eager_kernel_time_us", "compile_kernel_time_us", "speedup_vs_eager_kernel_time",
    "speedup_vs_compile_kernel_time", "message", "rule", "stats", "baselines", "device", "versions", "isolation",
    "checks", "language", "problem_hash", "solution_hash", "seed", "wall_s", "stage_seconds",
]


def _fresh() -> EvaluationResult:
    return EvaluationResult(device_kind="cuda", language="cuda", problem_hash="p" * 16, solution_hash="s" * 16, seed=3)


def test_an_accepted_result_has_the_speedups_of_both_metrics_and_the_contract_takes_it():
    result = _fresh()
    result.rules = "kernelhub"
    result.set_timing({"median_us": 50.0, "calls": 100})
    result.kernel_time_us = 40.0
    result.set_baseline("eager", {"median_us": 100.0}, 120.0)
    result.set_baseline("compile", {"median_us": 75.0, "cached": True}, None)
    result.accept()
    data = result.to_json()
    assert list(data)[: len(KEYS)] == KEYS and data["rules"] == "kernelhub"
    assert "solution_format" not in data and "op_seconds" not in data  # only where a workdir / a cleanup set them
    assert data["runtime_us"] == 50.0 and data["stats"]["calls"] == 100
    assert data["speedup_vs_eager"] == 2.0 and data["speedup_vs_compile"] == 1.5
    assert data["speedup_vs_eager_kernel_time"] == 3.0 and data["compile_kernel_time_us"] is None
    assert data["speedup_vs_compile_kernel_time"] is None
    assert data["baselines"]["compile"] == {"median_us": 75.0, "cached": True}
    assert data["device"] == {"kind": "cuda"}
    parsed = Result.from_json(data)
    assert parsed.verdict == "accepted" and parsed.correct is True and parsed.speedup_vs_eager == 2.0


def test_a_verdict_other_than_accepted_reports_no_runtime_and_says_whether_the_trials_passed():
    result = _fresh()
    result.set_timing({"median_us": 3.0})
    result.set_baseline("eager", {"median_us": 100.0}, None)
    result.set_verdict("rejected", "rule timing_forged broken: ...", "timing_forged", trials_passed=True)
    data = result.to_json()
    assert data["runtime_us"] is None and data["speedup_vs_eager"] is None and data["speedup_vs_compile"] is None
    assert data["eager_us"] == 100.0  # the baseline was measured: it stays
    assert data["correct"] is True and data["rule"] == "timing_forged"
    wrong = _fresh()
    wrong.set_verdict("wrong_answer", "output 0 differs", None, trials_passed=True)
    assert wrong.to_json()["correct"] is False
    assert Result.from_json(data).rule == "timing_forged"


def test_it_refuses_what_the_contract_does_not_know():
    with pytest.raises(ValueError, match="unknown verdict"):
        _fresh().set_verdict("fast", "", None, trials_passed=False)
    with pytest.raises(ValueError, match="no baseline"):
        _fresh().set_baseline("inductor", {"median_us": 1.0}, None)
