from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_rejects_an_output_that_is_an_input():
    solution = with_forward("""
        ext.relu_scale_inplace(x, self.scale)
        return x
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "rejected"
    assert result["rule"] == "output_aliases_input"
    assert "shares memory with an input" in result["message"]


def test_it_rejects_an_output_that_is_a_view_of_an_input():
    solution = with_forward("""
        ext.relu_scale_inplace(x, self.scale)
        return x.view(-1).view(x.shape)
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "rejected"
    assert result["rule"] == "output_aliases_input"
