"""Packages that break one rule of the Neural Engine are ineligible, with that rule and op named."""

import coremltools as ct
import numpy as np
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import get_new_symbol, types

from ane_runner.validate import validate
from tests.ane.helpers import POINTWISE, POINTWISE_SHAPE, convert_zip, pointwise_weights, rules

MACOS15 = ct.target.macOS15


def _check(zipped):
    report, _, _ = validate(POINTWISE.read_text(), zipped, solution_name="model.zip", baseline=False)
    assert report["eligible"] is False
    return report


def test_it_flags_a_gather():
    w, b = pointwise_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)], opset_version=MACOS15)
    def prog(x):
        # a channel permutation by gather, then the honest conv
        x = mb.gather(x=x, indices=np.arange(511, -1, -1, dtype=np.int32), axis=1)
        return mb.relu(x=mb.conv(x=x, weight=w[:, ::-1].copy(), bias=b))

    report = _check(convert_zip(prog))
    assert {"op": "gather", "rule": "unsupported_op"} in [{"op": i["op"], "rule": i["rule"]} for i in report["issues"]]


def test_it_flags_fp32_compute():
    w, b = pointwise_weights(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp32)], opset_version=MACOS15)
    def prog(x):
        return mb.relu(x=mb.conv(x=x, weight=w, bias=b))

    report = _check(convert_zip(prog, precision="fp32"))
    flagged = {i["op"] for i in report["issues"] if i["rule"] == "fp16_compute"}
    assert flagged == {"conv", "relu"}
    assert rules(report) == {"fp16_compute"}


def test_it_flags_a_dynamic_shape():
    w, b = pointwise_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 512, 1, get_new_symbol()), dtype=types.fp16)], opset_version=MACOS15)
    def prog(x):
        return mb.relu(x=mb.conv(x=x, weight=w, bias=b))

    report = _check(convert_zip(prog))
    assert "dynamic_shape" in rules(report)
    assert any(i["op"] == "input" and i["rule"] == "dynamic_shape" for i in report["issues"])


def test_it_flags_a_misaligned_last_axis():
    w, b = pointwise_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)], opset_version=MACOS15)
    def prog(x):
        # the 512 positions folded as 32 x 16: the last axis is 16 fp16 values, 32 bytes
        x = mb.reshape(x=x, shape=[1, 512, 32, 16])
        y = mb.relu(x=mb.conv(x=x, weight=w, bias=b))
        return mb.reshape(x=y, shape=[1, 1024, 1, 512])

    report = _check(convert_zip(prog))
    misaligned = [i for i in report["issues"] if i["rule"] == "last_axis_alignment"]
    assert misaligned and {i["op"] for i in misaligned} >= {"reshape", "conv"}
    assert "32 bytes" in misaligned[0]["detail"]


def test_it_flags_a_dilated_convolution():
    w, b = pointwise_weights()
    wide = np.repeat(w, 3, axis=3) / 3  # a (1, 3) kernel

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)], opset_version=MACOS15)
    def prog(x):
        return mb.relu(x=mb.conv(x=x, weight=wide.astype(np.float16), bias=b, pad_type="same",
                                 dilations=[1, 2]))

    report = _check(convert_zip(prog))
    dilated = [i for i in report["issues"] if i["rule"] == "unsupported_op"]
    assert [i["op"] for i in dilated] == ["conv"] and "dilated" in dilated[0]["detail"]


def test_it_flags_a_wrong_interface():
    w, b = pointwise_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)], opset_version=MACOS15)
    def prog(x):
        return mb.relu(x=mb.conv(x=x, weight=w[:512], bias=b[:512]))  # 512 output channels, not 1024

    report = _check(convert_zip(prog))
    assert rules(report) == {"interface"}
    assert "[[1, 512, 1, 512]]" in report["issues"][0]["detail"]


def test_it_flags_an_output_that_ignores_the_input():
    w, b = pointwise_weights()
    stored = np.zeros((1, 1024, 1, 512), np.float16)

    @mb.program(input_specs=[mb.TensorSpec(shape=POINTWISE_SHAPE, dtype=types.fp16)], opset_version=MACOS15)
    def prog(x):
        mb.conv(x=x, weight=w, bias=b)  # computed, then dropped
        return mb.relu(x=mb.add(x=stored, y=np.float16(1.0)))

    report = _check(convert_zip(prog))
    assert "constant_output" in rules(report)
