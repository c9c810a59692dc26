"""The baseline is the reference Model through ct.convert's defaults, as a package the Mac can time."""

import io
import zipfile

import pytest

from ane_runner import mil
from ane_runner.package import package_spec, package_unzip
from ane_runner.problem import problem_load, reference_inputs
from ane_runner.validate import baseline_convert
from tests.ane.helpers import ATTENTION, FFN, LAYERNORM, POINTWISE, REPO


@pytest.mark.parametrize(("path", "dense"), [
    (POINTWISE, 2 * 1024 * 512 * 512),
    (FFN, 2 * (3072 * 768 * 256) * 2),
    (LAYERNORM, 0),
    # QKV and output projections, then Q.K and A.V for 8 heads of 64 over 256 positions
    (ATTENTION, 2 * 256 * (1536 * 512 + 512 * 512) + 2 * (2 * 8 * 256 * 256 * 64)),
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


def test_it_reports_a_reference_that_does_not_convert_instead_of_failing(tmp_path):
    from ane_runner.validate import validate

    source = (REPO / "tests/ane/problems/unconvertible_ane.py").read_text()
    report, _, baseline = validate(source, b"PK\x03\x04 junk", solution_name="m.zip")
    assert baseline is None
    assert "does not convert with ct.convert's defaults" in report["baseline"]["error"]
    assert "special_bessel_j0" in report["baseline"]["error"]
