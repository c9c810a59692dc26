"""The precision rule end to end (gpu_runner/precision.py): a float32 problem is solved in float32.

The solutions are plain torch code (the fixtures' problems allow the ops): what matters here is the precision
each one computes in, and every one of them is inside the problem's atol/rtol."""

from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import FIXTURES

MATMUL = (FIXTURES / "matmul_fp32.py").read_text()
ROW_SUM = (FIXTURES / "row_sum_fp32.py").read_text()
KERNELS = (FIXTURES / "precision_kernels_cpp.py").read_text()


def matmul_solution(*, mode: int, chunk: int = 1 << 30, reverse: bool = False) -> str:
    """The fixture's C++ matmul: mode 0 float32, 1 inputs rounded to bfloat16, 2 to TF32 (inside the kernel)."""
    return KERNELS + f"""

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _ext.matmul(a.contiguous(), b.contiguous(), {mode}, {chunk}, {reverse})
"""


BF16_INPUTS = matmul_solution(mode=1)
TF32_INPUTS = matmul_solution(mode=2)
SPLIT_K = matmul_solution(mode=0, chunk=128)  # eight float32 partial sums over k, added in order
REVERSED_K = matmul_solution(mode=0, reverse=True)  # one float32 accumulator, k from the end
# Blocks of 1024 summed in order, then a pairwise tree over the 256 block sums.
BLOCKED_PAIRWISE_SUM = KERNELS + """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.row_sum(x.contiguous(), 1024)
"""


def assert_precision_rejected(result):
    assert result["verdict"] == "wrong_answer", result["message"]
    assert result["rule"] == "precision"
    assert "error against float64 is" in result["message"]
    assert "this problem is float32: compute in float32" in result["message"]
    figures = result["checks"]["precision"]
    assert figures["rule"] == "fp32" and figures["checked"] is True
    assert figures["error_vs_fp64"] > figures["bound"] > figures["reference_error_vs_fp64"] > 0
    # Inside the ordinary tolerance: only the precision rule catches it.
    assert result["checks"]["max_rel_fro_err"] < 1e-2


def test_it_rejects_a_float32_matmul_on_bfloat16_rounded_inputs():
    result = evaluate(MATMUL, BF16_INPUTS, device="cpu")
    assert_precision_rejected(result)
    assert result["checks"]["precision"]["ratio"] > 100


def test_it_rejects_a_float32_matmul_on_tf32_inputs():
    assert_precision_rejected(evaluate(MATMUL, TF32_INPUTS, device="cpu"))


def test_it_accepts_honest_float32_in_other_summation_orders():
    for source in (SPLIT_K, REVERSED_K):
        result = evaluate(MATMUL, source, device="cpu")
        assert result["verdict"] == "accepted", result["message"]
        figures = result["checks"]["precision"]
        assert figures["checked"] is True and figures["trials"] == 5
        assert figures["error_vs_fp64"] < figures["bound"] / 4


def test_it_accepts_bfloat16_where_the_problem_allows_it():
    problem = MATMUL.replace('"level": 1,', '"level": 1,\n    "precision": "bf16",')
    result = evaluate(problem, BF16_INPUTS, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    assert result["checks"]["precision"]["rule"] == "bf16"


def test_it_accepts_a_blocked_pairwise_sum_over_a_long_dimension():
    result = evaluate(ROW_SUM, BLOCKED_PAIRWISE_SUM, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    assert result["checks"]["precision"]["checked"] is True
