"""Honest CUDA, Triton and CuPy solutions on a real GPU, and recovery after an illegal memory access.
Run on the H200 (docs/GPU_RUNS.md); skipped where there is no CUDA device."""

import importlib.util

import pytest
import torch

from gpu_runner.evaluate import evaluate
from gpu_runner.formats import detect_language
from tests.evaluator.helpers import FIXTURES, PROBLEM, with_forward

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)"),
]
CUDA_SOLUTION = (FIXTURES / "relu_scale_cuda.py").read_text()


def _accepted(solution: str, language: str) -> dict:
    assert detect_language(solution) == language
    result = evaluate(PROBLEM, solution, device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    assert result["language"] == language
    assert result["runtime_us"] > 0 and result["eager_us"] > 0 and result["compile_us"] > 0
    assert result["device"]["kind"] == "cuda" and result["device"].get("name")
    assert result["checks"]["timed_calls_checked"] >= 1
    return result


def test_it_accepts_a_load_inline_cuda_solution():
    result = _accepted(CUDA_SOLUTION, "cuda")
    assert "sm_clock_mhz" in result["device"] and "temperature_c" in result["device"]


def test_it_accepts_a_triton_solution():
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    _accepted((FIXTURES / "relu_scale_triton.py").read_text(), "triton")


def test_it_accepts_a_cupy_solution():
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("cupy is not installed")
    _accepted((FIXTURES / "relu_scale_cupy.py").read_text(), "cupy")


def test_it_survives_an_illegal_memory_access_and_the_next_evaluation_works():
    broken = with_forward("return ext.illegal_address(x.contiguous())", base=CUDA_SOLUTION)
    result = evaluate(PROBLEM, broken, device="cuda")
    assert result["verdict"] == "runtime_error"
    assert "illegal memory access" in result["message"] or "CUDA" in result["message"], result["message"]
    _accepted(CUDA_SOLUTION, "cuda")
