"""The Mac reads the job's reference file back exactly as the site wrote it, for any number of input sets."""

import base64

import numpy as np

from ane_runner.evaluate_mac import reference_sets
from ane_runner.problem import problem_load, reference_inputs, reference_npz_bytes
from tests.ane.helpers import LAYERNORM


def test_it_reads_every_set_in_order_beyond_ten():
    problem = problem_load(LAYERNORM.read_text())
    seeds = list(range(1, 13))  # s1_in0 and s10_in0 must not be confused
    data, digest = reference_npz_bytes(problem, input_seeds=seeds)
    sets = reference_sets({"reference_b64": base64.b64encode(data).decode(), "reference_digest": digest,
                           "input_sets": len(seeds)})
    assert len(sets) == 12
    for seed, (ins, outs) in zip(seeds, sets, strict=True):
        assert len(ins) == 1 and len(outs) == 1
        np.testing.assert_array_equal(ins[0], reference_inputs(problem, seed=seed)[0].numpy())
        assert outs[0].shape == (1, 768, 1, 1024)
