"""The baseline is the reference Model through ct.convert's defaults, as a package the Mac can time."""

import io
import zipfile

import pytest

from ane_runner import mil
from ane_runner.package import package_spec, package_unzip
from ane_runner.problem import problem_load, reference_inputs
from ane_runner.validate import baseline_convert
from tests.ane.helpers import FFN, LAYERNORM, POINTWISE


@pytest.mark.parametrize(("path", "dense"), [
    (POINTWISE, 2 * 1024 * 512 * 512),
    (FFN, 2 * (3072 * 768 * 256) * 2),
    (LAYERNORM, 0),
])
def test_it_converts_each_problem_with_core_ml_defaults(path, dense, tmp_path):
    problem = problem_load(path.read_text())
    inputs = reference_inputs(problem, seed=1)
    info, zipped = baseline_convert(problem, inputs)
    assert info["compute_units"] == ["ALL", "CPU_ONLY"]
    conv = info["conversion"]
    assert conv["source"] == "ct.convert defaults" and conv["compute_precision"] == "fp16"
    # defaults: fp32 inputs and outputs, cast to fp16 at the edges, fp16 inside
    assert [i["dtype"] for i in conv["inputs"]] == ["float32"]
    assert [i["shape"] for i in conv["inputs"]] == [list(inputs[0].shape)]
    assert info["ops"]["cast"] == 2
    assert not [i for i in info["issues"] if i["rule"] == "fp16_compute"]
    assert info["flops_dense"] == dense
    # the zip is a package the Mac can unpack and read again
    pkg = package_unzip(zipped, tmp_path / "b")
    assert mil.analyze_spec(package_spec(pkg)).ops == info["ops"]
    assert all(n.startswith("model.mlpackage/") for n in zipfile.ZipFile(io.BytesIO(zipped)).namelist())
