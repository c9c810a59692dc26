"""Unusual problems on a real GPU (the CUDA track, and CUDA inputs on the CPU track). Run on the H200
(docs/GPU_RUNS.md); skipped where there is no CUDA device."""

import pytest
import torch

from gpu_runner.evaluate import EvaluatorError, evaluate
from tests.evaluator import shapes_fixtures as f
from tests.evaluator.helpers import FIXTURES, HONEST, PROBLEM, with_forward

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)"),
]
CUDA_SOLUTION = (FIXTURES / "relu_scale_cuda.py").read_text()


def test_it_judges_a_reference_that_changes_its_input_on_the_gpu():
    result = evaluate(f.IN_PLACE_PROBLEM, CUDA_SOLUTION, device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    assert result["checks"]["timed_calls_checked"] >= 1


def test_it_accepts_a_nested_output_with_a_python_number_on_the_gpu():
    problem = PROBLEM.replace("return torch.relu(x) * self.scale", "return torch.relu(x) * self.scale, (None, x.shape[0])")
    solution = with_forward("return ext.relu_scale(x.contiguous(), self.scale), (None, x.shape[0])",
                            base=CUDA_SOLUTION)
    result = evaluate(problem, solution, device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    wrong = with_forward("return ext.relu_scale(x.contiguous(), self.scale), (None, x.shape[0] + 1)",
                         base=CUDA_SOLUTION)
    result = evaluate(problem, wrong, device="cuda")
    assert result["verdict"] == "wrong_answer" and "output 1: 1 of 1 elements differ" in result["message"]


def test_it_reports_cuda_inputs_on_the_cpu_track_as_a_problem_error():
    # The CPU track's children see no GPU (CUDA_VISIBLE_DEVICES empty, the device nodes hidden): such a problem
    # belongs on the CUDA track. (Before they were hidden, the address-space limit kept CUDA from starting: seen on
    # the H200, cudaGetDeviceCount "out of memory".)
    problem = PROBLEM.replace("torch.randn(128, 1024)", "torch.randn(128, 1024, device='cuda')")
    assert problem != PROBLEM
    with pytest.raises(EvaluatorError, match=r"(?s)the reference \(eager\) failed at trial.*get_inputs"):
        evaluate(problem, HONEST, device="cpu")


def test_it_reports_a_random_forward_on_the_gpu():
    with pytest.raises(EvaluatorError, match="not deterministic"):
        evaluate(f.RANDOM_PROBLEM, CUDA_SOLUTION, device="cuda")
