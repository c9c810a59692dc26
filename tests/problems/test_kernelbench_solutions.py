"""The honest KernelBench solutions of benchmarks/kernelbench_solutions.py, before any GPU time is spent on them:
each one the script writes passes the static pre-screen, reads as CUDA, builds its ModelNew from the problem's own
get_init_inputs(), takes the reference Model's state_dict by name (strict: the weights, biases and running
statistics a solution keeps under the reference's attribute names), and its forward takes the problem's inputs.

KernelBench's problem files are test data outside the project (../shared/data/kernelbench, or where
KERNELHUB_KERNELBENCH names a checkout); without them these tests skip. The CUDA extension is not built here (no
GPU, no CUDA headers in the CPU build of torch): load_inline is swapped for a stand-in while a solution's module
runs, and nvcc's own check of the kernels is in docs/GPU_RUNS.md's notes.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gpu_runner.anticheat import prescreen
from gpu_runner.formats import detect_language, problem_metadata

REPO = Path(__file__).resolve().parents[2]


def _kernelbench() -> Path | None:
    for candidate in (os.environ.get("KERNELHUB_KERNELBENCH"), REPO.parent / "shared/data/kernelbench",
                      "/work/shared/data/kernelbench"):
        if candidate and (Path(candidate) / "KernelBench" / "level1").is_dir():
            return Path(candidate) / "KernelBench"
    return None


KB = _kernelbench()
pytestmark = pytest.mark.skipif(KB is None, reason="KernelBench's problem files are not on this machine")


@pytest.fixture(scope="module")
def solutions(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kb_solutions")
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "kernelbench_solutions.py"), "--out", str(out)],
                   check=True, capture_output=True, timeout=120)
    return out


def _cases() -> list[tuple[str, str]]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import kernelbench_solutions as ks
    finally:
        sys.path.pop(0)
    return sorted((level, name) for level, name, _ in ks.all_solutions())


CASES = _cases()


def _load(path: Path, name: str) -> types.ModuleType:
    """The file's module, run with load_inline standing in for the CUDA build (an object with no functions)."""
    import torch.utils.cpp_extension as cpp

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    real = cpp.load_inline
    cpp.load_inline = lambda **kwargs: types.SimpleNamespace(build=kwargs)
    try:
        spec.loader.exec_module(module)
    finally:
        cpp.load_inline = real
    return module


def test_it_writes_a_solution_for_every_family(solutions):
    written = {p.relative_to(solutions).as_posix() for p in solutions.rglob("*.py")}
    assert written == {f"{level}/{name}.py" for level, name in CASES}
    assert len([c for c in CASES if c[0] == "level1"]) >= 47


@pytest.mark.parametrize(("level", "name"), CASES, ids=[f"{lv}/{n}" for lv, n in CASES])
def test_the_solution_fits_its_problem(solutions, level, name):
    problem_path = KB / level / f"{name}.py"
    assert problem_path.is_file(), f"KernelBench has no {level}/{name}.py"
    source = (solutions / level / f"{name}.py").read_text()
    assert detect_language(source) == "cuda"
    assert prescreen(source, problem_metadata(problem_path.read_text())) == []

    problem = _load(problem_path, f"kb_problem_{level}_{name}")
    solution = _load(solutions / level / f"{name}.py", f"kb_solution_{level}_{name}")
    build = solution._ext.build
    assert build["cuda_sources"] and build["functions"], "the solution builds no CUDA function"
    init = problem.get_init_inputs()
    reference = problem.Model(*init)
    ours = solution.ModelNew(*init)
    # Strict: every parameter and buffer of the reference has its place in ours, under the same name.
    ours.load_state_dict(reference.state_dict(), strict=True)
    forward = inspect.signature(ours.forward)
    forward.bind(*[object() for _ in inspect.signature(reference.forward).parameters])
