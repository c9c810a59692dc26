"""On an NVIDIA GPU: the evaluator accepts every honest CUDA, Triton and CuPy example (run on the H200)."""

import pytest
import torch

from .evaluator_cli import assert_accepted, evaluate_cli
from .suite import GPU_EXAMPLES, ids, problem_for

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs an NVIDIA GPU (CUDA not available)"
)


@pytest.mark.cuda
@needs_cuda
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("path", GPU_EXAMPLES, ids=ids(GPU_EXAMPLES))
def test_it_accepts_the_gpu_example(path):
    if path.parent.name in ("triton", "cupy"):
        pytest.importorskip(path.parent.name, reason=f"{path.parent.name} is not installed on this host")
    result = evaluate_cli(problem_for(path), path, device="cuda", timeout=1400)
    assert_accepted(result)
    assert result["language"] == path.parent.name
