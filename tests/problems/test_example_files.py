"""Every example solution parses, defines ModelNew like its problem's Model, and passes the static pre-screen."""

import ast

import pytest

from gpu_runner.anticheat import prescreen
from gpu_runner.formats import detect_language, problem_metadata

from .suite import ALL_EXAMPLES, CPU_EXAMPLES, EXAMPLES, GPU_EXAMPLES, ids, init_params, problem_for


def test_it_has_the_promised_examples():
    by_language = {}
    for path in ALL_EXAMPLES:
        by_language.setdefault(path.relative_to(EXAMPLES).parts[:2], []).append(path)
    assert len(by_language.get(("gpu", "cuda"), [])) >= 10
    assert len(by_language.get(("gpu", "triton"), [])) >= 2
    assert len(by_language.get(("gpu", "cupy"), [])) >= 2
    assert len(by_language.get(("cpu", "cpp"), [])) >= 8
    for track in (GPU_EXAMPLES, CPU_EXAMPLES):
        levels = {problem_for(p).parent.name for p in track if problem_for(p)}
        assert levels == {"level1", "level2", "level3"}


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=ids(ALL_EXAMPLES))
def test_it_pairs_with_a_problem(path):
    problem = problem_for(path)
    assert problem is not None, (
        f"no problem {path.stem}.py under problems/{path.relative_to(EXAMPLES).parts[0]}/"
    )
    tree = ast.parse(path.read_text())
    assert init_params(tree, "ModelNew") == init_params(ast.parse(problem.read_text()), "Model")


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=ids(ALL_EXAMPLES))
def test_it_is_written_in_its_folders_language(path):
    language = path.parent.name
    assert detect_language(path.read_text()) == language


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=ids(ALL_EXAMPLES))
def test_it_passes_the_static_prescreen(path):
    meta = problem_metadata(problem_for(path).read_text())
    assert prescreen(path.read_text(), meta) == []


@pytest.mark.parametrize("path", CPU_EXAMPLES, ids=ids(CPU_EXAMPLES))
def test_it_builds_with_openmp(path):
    # The CPU track's examples are what `make run` shows: C++ with OpenMP, as the rules page describes.
    source = path.read_text()
    assert '"-fopenmp"' in source and '"-O3"' in source and "cpp_sources=" in source
