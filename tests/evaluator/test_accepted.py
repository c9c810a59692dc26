from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import HONEST, PROBLEM


def test_it_accepts_an_honest_cpp_solution_and_reports_stages():
    stages = []
    result = evaluate(PROBLEM, HONEST, device="cpu", seed=0, on_stage=stages.append)
    assert result["verdict"] == "accepted", result["message"]
    assert result["correct"] is True
    assert stages == ["compiling", "checking", "timing"]
    assert result["checks"]["max_abs_err"] <= 1e-6
    assert result["checks"]["timed_calls_checked"] >= 1
    assert result["checks"]["speed_of_light"]["ok"] is True
    assert result["checks"]["integrity"] == []
    assert result["eager_us"] > 0 and result["speedup_vs_eager"] > 0
    # The profiler's device time (CUDA Agent's measure) is a CUDA figure: on a CPU it is absent, and says why.
    assert result["kernel_time_us"] is None and result["checks"]["kernel_time"]["measured"] is False
    # The parent's clock on back-to-back calls (the op record off in both of its loops), and beside it the child's
    # own word on its host time in forward per call.
    assert result["checks"]["wall_per_call_us"] >= 0
    assert result["checks"]["back_to_back_forward_host_us_reported"] > 0
