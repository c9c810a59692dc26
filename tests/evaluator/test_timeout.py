import time

from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_gives_timeout_for_an_endless_forward_and_kills_it(monkeypatch):
    monkeypatch.setenv("KERNELHUB_STEP_TIMEOUT_S", "5")
    solution = with_forward("""
        while True:
            pass
    """)
    start = time.monotonic()
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "timeout"
    assert "within 5 s" in result["message"]
    assert time.monotonic() - start < 120
