import re

from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_reports_the_worst_mismatch_with_index_expected_and_got():
    solution = with_forward("return ext.relu_scale(x.contiguous(), self.scale * 1.01)")
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "wrong_answer"
    assert result["correct"] is False
    assert result["runtime_us"] is None
    message = result["message"]
    assert message.startswith("trial 1 of 5")
    assert re.search(r"worst at index \(\d+, \d+\): expected [-\d.e]+, got [-\d.e]+", message), message
