"""A crashing solution gets a verdict, and the next evaluation works. The crashes happen in native code
(the shared test extension), where no static or Python-level check can see them coming."""

from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import HONEST, PROBLEM, with_forward


def test_it_gives_runtime_error_for_a_segfault_and_recovers():
    solution = with_forward("""
        ext.crash_segfault()
        return ext.relu_scale(x.contiguous(), self.scale)
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "runtime_error"
    assert "SIGSEGV" in result["message"]
    after = evaluate(PROBLEM, HONEST, device="cpu")
    assert after["verdict"] == "accepted", after["message"]


def test_it_gives_runtime_error_for_exit_zero_in_forward():
    solution = with_forward("""
        ext.exit_now(0)
        return ext.relu_scale(x.contiguous(), self.scale)
    """)
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "runtime_error"
    assert "exited with status 0" in result["message"]
