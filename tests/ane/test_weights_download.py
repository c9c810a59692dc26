"""The weights a problem page offers: the reference state_dict for the published seed, readable without pickle."""

import io
import subprocess
import sys

import numpy as np
import torch

from ane_runner.problem import WEIGHTS_SEED, problem_load, weights_npz_bytes
from tests.ane.helpers import FFN, REPO


def test_it_writes_the_reference_state_dict_for_the_published_seed():
    problem = problem_load(FFN.read_text())
    data = np.load(io.BytesIO(weights_npz_bytes(problem)), allow_pickle=False)
    torch.manual_seed(WEIGHTS_SEED)
    model = problem.module.Model(*problem.module.get_init_inputs())
    expected = model.state_dict()
    assert sorted(data.files) == sorted(expected)
    for name, tensor in expected.items():
        assert data[name].dtype == np.float32
        np.testing.assert_array_equal(data[name], tensor.numpy())


def test_it_is_the_same_file_every_time():
    problem = problem_load(FFN.read_text())
    assert weights_npz_bytes(problem) == weights_npz_bytes(problem)


def test_it_is_offered_by_the_cli(tmp_path):
    out = tmp_path / "ffn.npz"
    run = subprocess.run([sys.executable, "-m", "ane_runner", "weights", "--problem", str(FFN), "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert set(np.load(out, allow_pickle=False).files) == {"up.weight", "up.bias", "down.weight", "down.bias"}
