"""What the site adds to an ANE job: built packages, references for fresh inputs, and a digest the Mac checks."""

import base64
import io

import numpy as np
import pytest

from ane_runner.evaluate_mac import JobError, reference_sets
from ane_runner.jobs import PACKAGE_PREFIX, ane_job_prepare, solution_bytes
from ane_runner.package import package_spec, package_unzip
from ane_runner.problem import problem_load, reference_inputs, reference_outputs
from tests.ane.helpers import EXAMPLES, POINTWISE


@pytest.fixture(scope="module")
def prepared():
    source = (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_text()
    return ane_job_prepare(problem_source=POINTWISE.read_text(), solution_source=source)


def test_it_ships_packages_and_reference_sets_the_mac_can_check(prepared, tmp_path):
    report, ane = prepared
    assert report["eligible"] and ane is not None
    sets = reference_sets(ane)  # checks the published set's digest
    assert len(sets) == ane["input_sets"] == 3
    assert ane["reference_digest"] == report["reference"]["digest"]
    # the fresh sets are new inputs with their own torch reference outputs
    problem = problem_load(POINTWISE.read_text())
    published = reference_inputs(problem, seed=1)[0].numpy()
    np.testing.assert_array_equal(sets[0][0][0], published)
    for ins, outs in sets[1:]:
        assert not np.array_equal(ins[0], published)
        import torch

        np.testing.assert_array_equal(outs[0], reference_outputs(problem, [torch.from_numpy(ins[0])])[0])
    for key in ("package_b64", "baseline_b64"):
        package_spec(package_unzip(base64.b64decode(ane[key]), tmp_path / key))
    # TFLOPS count the problem's work (the baseline graph), not whatever the solution's graph claims
    assert ane["flops"] == report["baseline"]["flops"]


def test_it_refuses_a_damaged_reference(prepared):
    _, ane = prepared
    data = dict(np.load(io.BytesIO(base64.b64decode(ane["reference_b64"])), allow_pickle=False))
    data["s0_out0"] = data["s0_out0"] + 1
    buf = io.BytesIO()
    np.savez(buf, **data)
    with pytest.raises(JobError, match="do not match their digest"):
        reference_sets(dict(ane, reference_b64=base64.b64encode(buf.getvalue()).decode()))


def test_it_prepares_nothing_for_an_ineligible_solution():
    report, ane = ane_job_prepare(problem_source=POINTWISE.read_text(),
                                  solution_source=PACKAGE_PREFIX + base64.b64encode(b"not a zip").decode())
    assert ane is None and report["eligible"] is False
    assert report["issues"][0]["rule"] == "package" and "sandbox" not in report["conversion"]


def test_it_decodes_uploaded_packages_and_explains_bad_base64():
    assert solution_bytes(PACKAGE_PREFIX + base64.b64encode(b"PK\x03\x04").decode()) == b"PK\x03\x04"
    assert solution_bytes("def build(w, s): ...") == b"def build(w, s): ..."
    with pytest.raises(ValueError, match="not valid base64"):
        solution_bytes(PACKAGE_PREFIX + "!!!")
