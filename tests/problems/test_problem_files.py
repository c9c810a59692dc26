"""Every bundled problem follows the KernelBench format and carries valid KERNELHUB metadata."""

import ast

import pytest

from gpu_runner.formats import problem_metadata

from .suite import ALL_PROBLEMS, CPU_PROBLEMS, GPU_PROBLEMS, ids, top_level


def test_it_has_the_promised_suite():
    levels = [int(p.parent.name.removeprefix("level")) for p in GPU_PROBLEMS]
    assert len(GPU_PROBLEMS) >= 24
    assert levels.count(1) >= 10 and levels.count(2) >= 9 and levels.count(3) >= 5
    assert len(CPU_PROBLEMS) >= 12
    assert {int(p.parent.name.removeprefix("level")) for p in CPU_PROBLEMS} == {1, 2, 3}


@pytest.mark.parametrize("path", ALL_PROBLEMS, ids=ids(ALL_PROBLEMS))
def test_it_defines_model_inputs_and_metadata(path):
    source = path.read_text()
    tree = ast.parse(source)
    names = top_level(tree)
    assert isinstance(names.get("Model"), ast.ClassDef)
    assert isinstance(names.get("get_inputs"), ast.FunctionDef)
    assert isinstance(names.get("get_init_inputs"), ast.FunctionDef)

    meta = problem_metadata(source)  # the evaluator's own reader: raises on a malformed dict
    assert set(meta) <= {"title", "level", "description", "atol", "rtol", "allow_torch"}, meta.keys()
    assert meta["title"].strip() and meta["description"].strip()
    assert len(meta["description"]) >= 80, "say what it computes and the shapes"
    assert meta["level"] == int(path.parent.name.removeprefix("level"))
    for op in meta.get("allow_torch", []):
        assert op.startswith("aten::"), op


@pytest.mark.parametrize("path", ALL_PROBLEMS, ids=ids(ALL_PROBLEMS))
def test_it_returns_inputs_on_the_cpu(path):
    # Inputs come back on the CPU (the evaluator moves them); no device or dtype games in get_inputs.
    tree = ast.parse(path.read_text())
    body = ast.unparse(top_level(tree)["get_inputs"])
    for marker in ("device", ".cuda(", ".to(", "torch.manual_seed"):
        assert marker not in body, f"get_inputs mentions {marker!r}"


@pytest.mark.parametrize("path", CPU_PROBLEMS, ids=ids(CPU_PROBLEMS))
def test_it_keeps_the_cpu_variant_the_same_computation(path):
    # A CPU variant differs from its GPU problem only in the size constants and the title.
    gpu = next(p for p in GPU_PROBLEMS if p.stem == path.stem.removesuffix("_cpu"))
    cpu_nodes, gpu_nodes = top_level(ast.parse(path.read_text())), top_level(ast.parse(gpu.read_text()))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        assert ast.unparse(cpu_nodes[name]) == ast.unparse(gpu_nodes[name]), name
    cpu_meta, gpu_meta = problem_metadata(path.read_text()), problem_metadata(gpu.read_text())
    for key in ("level", "atol", "rtol", "allow_torch"):
        assert cpu_meta.get(key) == gpu_meta.get(key), key
