from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import HONEST, PROBLEM
from tests.evaluator.test_result_object import KEYS


def test_it_accepts_an_honest_cpp_solution_and_reports_stages(monkeypatch):
    monkeypatch.setenv("KERNELHUB_AUDIT_SAMPLES", "1")  # the clock audit's raw figures, for the null calls' check below
    stages = []
    result = evaluate(PROBLEM, HONEST, device="cpu", seed=0, on_stage=stages.append)
    assert result["verdict"] == "accepted", result["message"]
    assert result["correct"] is True
    # The result object's keys, in their order (docs/EVALUATOR.md), as EvaluationResult.to_json writes them.
    assert list(result) == [*KEYS, "rules", "op_seconds"]
    assert stages == ["compiling", "checking", "timing"]
    assert result["checks"]["max_abs_err"] <= 1e-6
    assert result["checks"]["timed_calls_checked"] >= 1
    assert result["checks"]["speed_of_light"]["ok"] is True
    assert result["checks"]["integrity"] == []
    # Its children die with their process group: none is counted as having escaped it.
    assert "killed_escaped_processes" not in result["isolation"], result["isolation"]
    assert result["eager_us"] > 0 and result["speedup_vs_eager"] > 0
    # The profiler's device time (CUDA Agent's measure) is a CUDA figure: on a CPU it is absent, and says why.
    assert result["kernel_time_us"] is None and result["checks"]["kernel_time"]["measured"] is False
    # The parent's clock on back-to-back calls (the op record off in both of its loops), and beside it the child's
    # own word on its host time in forward per call.
    assert result["checks"]["wall_per_call_us"] >= 0
    assert result["checks"]["back_to_back_forward_host_us_reported"] > 0
    # The first null call of the trusted process pays one-time costs (the guard's first entry imports torch._dynamo:
    # 1.24 s against 3-6 ms for the others in a CLI evaluation here); it is made, reported and dropped before the
    # loop, so no audited null call carries them (on the H200 one such call had taken the audit's lower bound to
    # minus seconds).
    audit = result["checks"]["clock_audit"]
    assert audit["first_null_call_dropped_us"] > 0
    assert len(audit["samples"]) == audit["calls"]
    # Beside each null call's phases, the solution's own word on its run's (what that request added to them): where
    # the two sides' harness time differs when the audit reads a gap.
    for sample in audit["samples"]:
        mine = sample["request_phases_us_reported"]
        assert mine is not None and mine["call"] > 0 and mine["fingerprint"] >= 0, sample
