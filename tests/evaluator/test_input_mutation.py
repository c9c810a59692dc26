from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_computes_expected_outputs_where_mutating_inputs_cannot_reach():
    # Zero the input first, then compute honestly on it: if the expected output were computed on the
    # same (now zeroed) tensor after the call, this would pass.
    solution = with_forward("""
        x = x.contiguous()
        ext.relu_scale_inplace(x, 0.0)
        return ext.relu_scale(x, self.scale)
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "wrong_answer"
    assert "expected" in result["message"] and "got 0" in result["message"]
