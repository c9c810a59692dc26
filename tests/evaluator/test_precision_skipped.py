"""Where the reference cannot run in float64, the precision rule is skipped and the result says why: the
evaluation itself goes on."""

from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import FIXTURES
from tests.evaluator.test_precision import BF16_INPUTS

# The Model casts to float32 itself, so its "float64" run comes back in float32: no ground truth.
CASTS_TO_FLOAT32 = (FIXTURES / "matmul_fp32.py").read_text().replace(
    "return a @ b", "return a.float() @ b.float()")


def test_it_skips_the_precision_check_with_a_note_when_the_float64_run_is_not_float64():
    assert CASTS_TO_FLOAT32 != (FIXTURES / "matmul_fp32.py").read_text()
    result = evaluate(CASTS_TO_FLOAT32, BF16_INPUTS, device="cpu")
    assert result["verdict"] == "accepted", result["message"]
    figures = result["checks"]["precision"]
    assert figures["checked"] is False and figures["rule"] == "fp32"
    assert "output 0 of the float64 run is torch.float32" in figures["note"]
