"""Every CPU-sized problem runs eagerly on the CPU, deterministically, with small inputs."""

import pytest
import torch

from gpu_runner.formats import problem_metadata

from .suite import CPU_PROBLEMS, ids, load_module


@pytest.mark.parametrize("path", CPU_PROBLEMS, ids=ids(CPU_PROBLEMS))
def test_it_runs_the_reference_on_the_cpu(path):
    problem = load_module(path)
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs())
    inputs = problem.get_inputs()
    assert inputs and all(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in inputs)
    assert sum(t.numel() * t.element_size() for t in inputs) < 64 * 2**20, "CPU inputs stay under 64 MiB"
    with torch.no_grad():
        out = model(*[t.clone() for t in inputs])
        again = model(*[t.clone() for t in inputs])
    assert type(out) is torch.Tensor and out.numel() > 0
    assert torch.isfinite(out.float()).all()
    # The same function twice; multithreaded reductions may add in another order (logsumexp was seen to differ
    # in the last bits), so equal up to rounding, not bit for bit.
    # (CI, 2026-11-30: logsumexp_rows_cpu differed by 7e-6 relative under load: the evaluator's fp32 scale.)
    assert torch.allclose(out, again, rtol=1e-4, atol=1e-5)
    # Outputs of order one at least somewhere, so that an all-zero answer cannot pass the tolerance.
    meta = problem_metadata(path.read_text())
    assert out.float().abs().max().item() > 20 * meta.get("atol", 1e-4)


@pytest.mark.parametrize("path", CPU_PROBLEMS, ids=ids(CPU_PROBLEMS))
def test_it_draws_fresh_inputs_per_seed(path):
    problem = load_module(path)
    torch.manual_seed(1)
    first = problem.get_inputs()
    torch.manual_seed(2)
    second = problem.get_inputs()
    assert not torch.equal(first[0], second[0])
