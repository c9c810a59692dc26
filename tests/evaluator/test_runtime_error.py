from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_gives_runtime_error_with_the_exception():
    solution = with_forward("""
        y = ext.relu_scale(x.contiguous(), self.scale)
        raise ValueError("boom from the solution")
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "runtime_error"
    assert "boom from the solution" in result["message"]
    assert "trial 1" in result["message"]
