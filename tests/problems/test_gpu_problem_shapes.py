"""The GPU-sized problems build and run on torch's meta device (shapes only; no multi-GB eager passes)."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from .suite import GPU_PROBLEMS, ids, load_module

# The brief: inputs of at most about 2 GB, so that generating them per trial stays cheap.
MAX_INPUT_BYTES = 2.2e9


@pytest.mark.parametrize("path", GPU_PROBLEMS, ids=ids(GPU_PROBLEMS))
def test_it_computes_output_shapes_on_meta(path):
    problem = load_module(path)
    with torch.device("meta"):
        model = problem.Model(*problem.get_init_inputs())
        inputs = problem.get_inputs()
        with FlopCounterMode(display=False) as counter:
            out = model(*inputs)
    assert type(out) is torch.Tensor and out.numel() > 0
    total = sum(t.numel() * t.element_size() for t in inputs)
    assert total <= MAX_INPUT_BYTES, f"inputs are {total / 1e9:.2f} GB"
    # Big enough for an H200 to spend about a millisecond: at least 1 GB of unavoidable traffic (inputs read
    # once, output written once) or 20 GFLOP. A floor only; measured times belong in docs/PROBLEMS.md.
    traffic = total + out.numel() * out.element_size()
    assert traffic >= 1e9 or counter.get_total_flops() >= 2e10, "too small to time on an H200"
