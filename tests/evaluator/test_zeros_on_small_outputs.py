from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import TINY_PROBLEM, with_forward


def test_it_fails_zeros_when_every_output_is_below_the_absolute_tolerance():
    # Outputs are about 1e-6, far below fp32's atol: elementwise, zeros would pass.
    solution = with_forward("return ext.relu_scale(x.contiguous(), 0.0)")
    result = evaluate(TINY_PROBLEM, solution, device="cpu")
    assert result["verdict"] == "wrong_answer"
    assert "relative error" in result["message"]
