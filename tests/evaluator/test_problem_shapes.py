"""Full evaluations of unusual but legal problems: the right verdict, or a problem error that says what to fix."""

import pytest

from gpu_runner.evaluate import EvaluatorError, evaluate
from tests.evaluator import shapes_fixtures as f
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_accepts_nested_outputs_numbers_and_non_tensor_inputs():
    result = evaluate(f.NESTED_PROBLEM, f.NESTED_HONEST, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    assert result["checks"]["timed_calls_checked"] > 0


def test_it_names_the_nested_output_that_differs():
    wrong = f.NESTED_HONEST.replace("ext.count_positive(x),", "ext.count_positive(x) + 1,")
    result = evaluate(f.NESTED_PROBLEM, wrong, device="cpu")
    assert result["verdict"] == "wrong_answer"
    # Outputs are numbered in order through the nesting: y, x.sum(), the count, ...
    assert "output 2: 1 of 1 elements differ" in result["message"]


def test_it_fails_an_output_nested_differently_from_the_reference():
    flat = f.NESTED_HONEST.replace("(ext.sum_all(x), ext.count_positive(x), ext.mean(x), None)",
                                   "ext.sum_all(x), ext.count_positive(x), ext.mean(x), None")
    result = evaluate(f.NESTED_PROBLEM, flat, device="cpu")
    assert result["verdict"] == "wrong_answer"
    assert "the reference's is (tensor, (tensor, int, float, None), tensor" in result["message"]


def test_it_runs_the_model_in_the_mode_it_was_constructed_in():
    # Batch statistics (training mode, as KernelBench runs it), not the running ones.
    result = evaluate(f.BATCHNORM_TRAIN_PROBLEM, f.BATCHNORM_TRAIN_HONEST, device="cpu")
    assert result["verdict"] == "accepted", result["message"]


def test_it_judges_a_reference_that_changes_and_returns_its_input():
    # Each call of the reference gets fresh inputs, in the trials and on the timing sets alike; a solution that
    # computes into a new tensor is right.
    result = evaluate(f.IN_PLACE_PROBLEM, f.IN_PLACE_HONEST, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    assert result["checks"]["timed_calls_checked"] > 0


def test_it_rejects_a_solution_that_changes_an_input_the_reference_leaves_alone():
    solution = with_forward("""
        x = x.contiguous()
        y = ext.relu_scale(x, self.scale)
        ext.relu_scale_inplace(x, 1.0)
        return y
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "rejected"
    assert result["rule"] == "input_changed"
    assert "changed input(s) [0] in place" in result["message"]


def test_it_reports_a_problem_whose_forward_is_random():
    with pytest.raises(EvaluatorError, match="not deterministic: two runs on the same inputs disagree"):
        evaluate(f.RANDOM_PROBLEM, f.IN_PLACE_HONEST, device="cpu")


def test_it_reports_a_problem_whose_output_is_nan_everywhere():
    with pytest.raises(EvaluatorError, match="NaN or Inf in every element"):
        evaluate(f.ALL_NAN_PROBLEM, f.IN_PLACE_HONEST, device="cpu")
