from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward

MEMO = """
    flat = x.reshape(-1)
    key = (float(flat[0]), float(flat[flat.numel() // 2]), float(flat[-1]))
    if key not in BANK:
        BANK[key] = ext.relu_scale(x.contiguous(), self.scale)
    return BANK[key].clone()
"""


def test_it_catches_results_memoised_by_input_content():
    # Honest on the first sight of an input, replays the stored result when a few values match: the
    # timing input sets repeat, but each timed call changes one element first, so the replay is stale.
    solution = with_forward(MEMO, prelude="BANK = {}\n")
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "wrong_answer", result["message"]
    assert "checked during timing" in result["message"]
