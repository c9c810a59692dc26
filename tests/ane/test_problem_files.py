"""Every bundled ANE problem is ANE-shaped (channels-first, 64-byte rows, fp16 tolerances) and has an example."""

import pytest

from ane_runner.problem import problem_load, problem_metadata, reference_inputs
from tests.ane.helpers import EXAMPLES, REPO

PROBLEMS = sorted((REPO / "problems/ane").glob("level*/*.py"))


def test_it_finds_the_bundled_problems():
    assert len(PROBLEMS) >= 4


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_it_has_ane_shaped_inputs_and_fp16_tolerances(path):
    meta = problem_metadata(path.read_text())
    assert {"title", "level", "description", "atol", "rtol"} <= set(meta)
    assert meta["level"] == int(path.parent.name.removeprefix("level"))
    assert path.stem.endswith("_ane")  # slugs must not collide with the GPU and CPU tracks
    assert 1e-3 <= meta["atol"] <= 1e-1 and 1e-3 <= meta["rtol"] <= 1e-1
    for x in reference_inputs(problem_load(path.read_text()), seed=1):
        b, c, one, s = x.shape  # (B, C, 1, S)
        assert one == 1 and s % 32 == 0, x.shape


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_it_has_an_example_solution(path):
    assert list(EXAMPLES.glob(f"*/{path.stem}.py")), f"no examples/ane/*/{path.stem}.py"
