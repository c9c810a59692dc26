"""The precision rule's arithmetic (gpu_runner/precision.py), without processes: the floor, several outputs,
sampling, and the KERNELHUB key."""

import pytest
import torch

from gpu_runner import formats, precision
from gpu_runner.evaluate import evaluate
from tests.evaluator.helpers import FIXTURES


def tf32_truncated(x):
    return (x.view(torch.int32) & -(1 << 13)).view(torch.float32)


def outcome(expected, truth, got, meta=None):
    check = precision.Check(meta or {})
    for seed, (e, t, g) in enumerate(zip(expected, truth, got, strict=True)):
        check.add(e, t, g, seed)
    return check.outcome()


def test_it_passes_ulp_noise_and_fails_tf32_where_float32_is_exact():
    # relu(x) * 2: PyTorch's float32 equals the float64 run (err_ref 0), so only the floor stands.
    x = torch.randn(4096)
    ref32 = torch.relu(x) * 2
    truth = (torch.relu(x.double()) * 2)
    one_ulp = torch.nextafter(ref32, torch.full_like(ref32, float("inf")))
    result = outcome([[ref32]], [[truth]], [[one_ulp]])
    assert result.ok and result.figures["reference_error_vs_fp64"] == 0.0
    assert result.figures["ratio"] is None
    rounded = outcome([[ref32]], [[truth]], [[torch.relu(tf32_truncated(x)) * 2]])
    assert not rounded.ok
    assert "error against float64 is" in rounded.message and "while the float32 reference's own is 0" in rounded.message


def test_it_names_the_worst_output_and_skips_outputs_of_other_dtypes():
    a = torch.rand(64, 512)
    b = torch.rand(512, 64)
    ref = [a @ b, (a @ b).half(), torch.ones(3, dtype=torch.int64)]
    truth = [a.double() @ b.double(), None, None]
    good = outcome([ref], [truth], [ref])
    assert good.ok and "output" in good.figures and good.figures["output"] == 0
    bad = outcome([ref], [truth], [[a.bfloat16().float() @ b.bfloat16().float(), ref[1], ref[2]]])
    assert not bad.ok and bad.message.startswith("output 0: error against float64 is")
    assert outcome([[ref[1]]], [[None]], [[ref[1]]]) is None  # no float32 output: the rule does not apply


def test_it_compares_a_large_output_on_the_same_sample_in_child_and_parent(monkeypatch):
    monkeypatch.setattr(precision, "SAMPLE_ABOVE", 1000)
    monkeypatch.setattr(precision, "SAMPLE_SIZE", 500)
    a, b = torch.rand(64, 256), torch.rand(256, 64)
    ref32, full = a @ b, a.double() @ b.double()
    seed = 7
    # What the child saves: the float64 values at the sampled positions only.
    truth = precision.sampled(full, precision.sample_index(full.numel(), seed))
    assert truth.numel() == 500
    check = precision.Check({})
    check.add([ref32], [truth], [ref32], seed)
    result = check.outcome()
    assert result.ok and result.figures["sampled"] is True and result.figures["elements"] == 500
    # A sample taken with another seed does not line up: the figures would be noise, so it must differ.
    other = precision.Check({})
    other.add([ref32], [precision.sampled(full, precision.sample_index(full.numel(), seed + 1))], [ref32], seed)
    assert other.outcome().figures["reference_error_vs_fp64"] > 100 * result.figures["reference_error_vs_fp64"]


def test_it_scales_the_bound_with_the_allowed_precision():
    assert precision.bound("bf16", 1e-7) == pytest.approx(2 ** 16 * precision.bound("fp32", 1e-7))
    assert precision.bound("tf32", 0.0) == pytest.approx(2 ** 13 * precision.FLOOR)


def test_it_refuses_an_unknown_precision_in_kernelhub():
    problem = (FIXTURES / "matmul_fp32.py").read_text().replace('"level": 1,', '"level": 1, "precision": "fp8",')
    with pytest.raises(formats.FormatError, match=r"KERNELHUB\['precision'\] is 'fp8'; it must be one of 'fp32'"):
        formats.problem_metadata(problem)
    with pytest.raises(ValueError, match="fp8"):
        evaluate(problem, "class ModelNew: pass\n", device="cpu")
    wrong_type = problem.replace('"fp8"', "32")
    with pytest.raises(formats.FormatError, match=r"KERNELHUB\['precision'\] must be str"):
        formats.problem_metadata(wrong_type)
