"""The advisory numpy evaluation of a package's graph: it confirms honest graphs and exposes wrong ones on
Linux, and it never decides eligibility."""

import coremltools as ct
import numpy as np
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

from ane_runner.problem import problem_load, reference_inputs
from ane_runner.validate import baseline_convert, validate
from tests.ane.helpers import (
    ATTENTION,
    FFN,
    LAYERNORM,
    POINTWISE,
    POINTWISE_SHAPE,
    convert_zip,
    pointwise_weights,
)


def _prog(w, b):
    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        return mb.relu(x=mb.conv(x=x, weight=w, bias=b))

    return prog


def test_it_confirms_a_graph_with_the_published_weights():
    report, _, _ = validate(POINTWISE.read_text(), convert_zip(_prog(*pointwise_weights())),
                            solution_name="m.zip", baseline=False)
    check = report["numpy_check"]
    assert check["ran"] and check["matches"], check
    assert 0 < check["max_abs_err"] < 2e-2  # fp16 rounding, not zero: the graph really ran in fp16


def test_it_exposes_a_graph_with_other_weights_without_deciding_eligibility():
    w, b = pointwise_weights()
    report, _, _ = validate(POINTWISE.read_text(), convert_zip(_prog(w * np.float16(1.1), b)),
                            solution_name="m.zip", baseline=False)
    check = report["numpy_check"]
    assert check["ran"] and check["matches"] is False
    assert "values outside" in check["detail"]
    assert report["eligible"] is True  # the Mac decides correctness


def test_it_says_why_it_did_not_run():
    w, b = pointwise_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        x = mb.gather(x=x, indices=np.arange(512, dtype=np.int32), axis=1)
        return mb.relu(x=mb.conv(x=x, weight=w, bias=b))

    report, _, _ = validate(POINTWISE.read_text(), convert_zip(prog), solution_name="m.zip", baseline=False)
    assert report["numpy_check"] == {"ran": False,
                                     "detail": "`gather` is not evaluated by the numpy checker"}


def test_it_confirms_each_core_ml_default_baseline():
    for path in (POINTWISE, LAYERNORM, FFN, ATTENTION):
        problem = problem_load(path.read_text())
        info, _ = baseline_convert(problem, reference_inputs(problem, seed=1))
        assert info["numpy_check"]["ran"] and info["numpy_check"]["matches"], (path.name, info["numpy_check"])


def test_it_refuses_to_compute_more_than_the_graph_declares(tmp_path):
    """A hand-edited spec that declares a small result for a broadcast that would be huge is not evaluated."""
    import io
    import zipfile

    from ane_runner.package import package_zip

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 512, 1, 512), dtype=types.fp16)],
                opset_version=ct.target.macOS15)
    def prog(x):
        return mb.add(x=x, y=np.ones((1024, 1, 1, 1), np.float16))  # broadcasts to (1024, 512, 1, 512)

    zipfile.ZipFile(io.BytesIO(convert_zip(prog))).extractall(tmp_path)
    spec_path = tmp_path / "model.mlpackage/Data/com.apple.CoreML/model.mlmodel"
    from coremltools.proto import Model_pb2

    spec = Model_pb2.Model()
    spec.ParseFromString(spec_path.read_bytes())
    fn = spec.mlProgram.functions["main"]
    add = [op for op in fn.block_specializations[fn.opset].operations if op.type == "add"][0]
    dims = add.outputs[0].type.tensorType.dimensions
    dims[0].constant.size, dims[1].constant.size = 1, 1024  # now claims the problem's (1, 1024, 1, 512)
    spec_path.write_bytes(spec.SerializeToString())
    report, _, _ = validate(POINTWISE.read_text(), package_zip(tmp_path / "model.mlpackage"),
                            solution_name="m.zip", baseline=False)
    assert report["numpy_check"]["ran"] is False
    assert "would give shape (1024, 512, 1, 512)" in report["numpy_check"]["detail"]


def test_it_skips_graphs_over_its_flop_budget(monkeypatch):
    import ane_runner.validate as validate_module

    monkeypatch.setattr(validate_module, "MAX_FLOPS", 10**6)
    report, _, _ = validate(POINTWISE.read_text(), convert_zip(_prog(*pointwise_weights())),
                            solution_name="m.zip", baseline=False)
    assert report["numpy_check"]["ran"] is False
    assert "estimated FLOPs is over" in report["numpy_check"]["detail"]
