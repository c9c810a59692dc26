"""Honest solutions of every bundled ANE problem validate as eligible, built by each route."""

import pytest

from ane_runner.validate import validate
from tests.ane.helpers import ATTENTION, EXAMPLES, FFN, LAYERNORM, POINTWISE


@pytest.mark.parametrize(("problem", "example", "source", "ops"), [
    (POINTWISE, "mil/pointwise_conv_relu_ane.py", "builder", {"conv": 1, "relu": 1}),
    (LAYERNORM, "mil/channel_layernorm_ane.py", "builder",
     {"add": 1, "mul": 3, "reduce_mean": 2, "rsqrt": 1, "sub": 1}),
    (FFN, "convert/ffn_gelu_ane.py", "modelnew", {"add": 3, "conv": 2, "mul": 6, "tanh": 1}),
    (ATTENTION, "mil/self_attention_ane.py", "builder",
     {"add": 1, "conv": 4, "matmul": 2, "reshape": 4, "softmax": 1, "transpose": 1}),
])
def test_it_accepts_the_examples(problem, example, source, ops):
    report, package, _ = validate(problem.read_text(), (EXAMPLES / example).read_bytes(), baseline=False)
    assert report["error"] is None, report["error"]
    assert report["issues"] == []
    assert report["eligible"] is True
    assert report["conversion"]["source"] == source
    assert report["ops"] == ops
    assert package is not None and package[:4] == b"PK\x03\x04"
    assert all(i["dtype"] == "float16" for i in report["conversion"]["inputs"])
    # the example computes the reference function (numpy evaluation of its graph; Core ML never ran here)
    assert report["numpy_check"]["matches"] is True, report["numpy_check"]


def test_it_counts_the_flops_of_a_pointwise_convolution():
    report, _, _ = validate(POINTWISE.read_text(), (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_bytes(),
                            baseline=False)
    # 1x1 conv 512 -> 1024 over 512 positions: 2 * 1024 * 512 * 512; ReLU: one per output element
    assert report["flops_dense"] == 2 * 1024 * 512 * 512
    assert report["flops"] == 2 * 1024 * 512 * 512 + 1024 * 512


def test_it_accepts_the_zipped_package_a_builder_produced():
    builder = (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_bytes()
    _, package, _ = validate(POINTWISE.read_text(), builder, baseline=False)
    report, again, _ = validate(POINTWISE.read_text(), package, solution_name="model.zip", baseline=False)
    assert report["eligible"] is True, report["issues"]
    assert report["conversion"]["source"] == "package"
    assert "sandbox" not in report["conversion"]  # an upload is only parsed, never run
    assert report["ops"] == {"conv": 1, "relu": 1}
    assert again == package  # zipping is deterministic: the same package, the same bytes
