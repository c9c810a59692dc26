"""The reference outputs' digest is a function of the problem and the seed only."""

import subprocess
import sys

from ane_runner.problem import outputs_digest, problem_load, reference_inputs, reference_outputs
from tests.ane.helpers import LAYERNORM, POINTWISE, REPO


def _digest(path, seed):
    problem = problem_load(path.read_text())
    return outputs_digest(reference_outputs(problem, reference_inputs(problem, seed=seed)))


def test_it_gives_the_same_digest_for_the_same_seed_in_a_fresh_process():
    here = _digest(POINTWISE, 1)
    code = ("from pathlib import Path; from tests.ane.test_reference_digest import _digest; "
            f"print(_digest(Path({str(POINTWISE)!r}), 1))")
    there = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert there.returncode == 0, there.stderr[-2000:]
    assert there.stdout.strip() == here == _digest(POINTWISE, 1)


def test_it_changes_with_the_seed_and_the_problem():
    assert _digest(POINTWISE, 1) != _digest(POINTWISE, 2)
    assert _digest(POINTWISE, 1) != _digest(LAYERNORM, 1)


def test_it_covers_shape_and_every_value():
    import numpy as np

    a = np.arange(64, dtype=np.float32).reshape(1, 64)
    b = a.copy()
    b[0, 63] = np.nextafter(b[0, 63], np.float32(100))  # one ulp in the last value
    assert outputs_digest([a]) != outputs_digest([b])
    assert outputs_digest([a]) != outputs_digest([a.reshape(64, 1)])
    assert outputs_digest([a]) == outputs_digest([a.astype(np.float64)])  # digested as fp32 either way
