"""End to end: the evaluator accepts honest C++/OpenMP examples, one per level (builds extensions: slow)."""

import pytest

from .evaluator_cli import assert_accepted, evaluate_cli
from .suite import EXAMPLES, problem_for

# One per level; the other CPU examples are checked by hand with the same command (docs/PROBLEMS.md).
CHOSEN = ["matmul_square_cpu", "layernorm_residual_cpu", "mlp_block_cpu"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("stem", CHOSEN)
def test_it_accepts_the_cpu_example(stem):
    solution = EXAMPLES / "cpu" / "cpp" / f"{stem}.py"
    result = evaluate_cli(problem_for(solution), solution, device="cpu", timeout=1100)
    assert_accepted(result)
    assert result["language"] == "cpp"
