from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import PROBLEM, with_forward


def test_it_gives_runtime_error_for_a_memory_hog(monkeypatch):
    monkeypatch.setenv("KERNELHUB_CHILD_MEMORY_GB", "3")
    solution = with_forward("""
        hoard = []
        while True:
            hoard.append(torch.ones(256 << 20, dtype=torch.uint8))
    """, prelude="import torch\n")
    result = evaluate(PROBLEM, solution, device="cpu")
    assert result["verdict"] == "runtime_error"
    assert "memory" in result["message"].lower() or "alloc" in result["message"].lower(), result["message"]
