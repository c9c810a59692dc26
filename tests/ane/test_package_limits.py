"""Packages over the size limit are refused before the server copies or zips them."""

import ane_runner.validate as validate_module
from tests.ane.helpers import EXAMPLES, POINTWISE


def test_it_refuses_a_built_package_over_the_limit(monkeypatch):
    monkeypatch.setattr(validate_module, "MAX_PACKAGE_BYTES", 100_000)  # the example's weights are 1 MB
    report, package, _ = validate_module.validate(
        POINTWISE.read_text(), (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_bytes(), baseline=False)
    assert package is None and report["eligible"] is False
    assert report["error"].startswith("the built package is ") and "the limit is 100000" in report["error"]
