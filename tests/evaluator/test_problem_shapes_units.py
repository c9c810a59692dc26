"""Unusual outputs at the unit level: the comparison (correctness.py) and how the harness flattens an output
(child.py's Harness._flatten, run in this process; no channel is needed for it)."""

import math

import pytest
import torch

from gpu_runner.child import Harness
from gpu_runner.correctness import compare, reference_problems


def _flatten(out, inputs=(), role="solution"):
    return Harness(None, role, {})._flatten(out, list(inputs))


def test_it_compares_integer_and_bool_outputs_exactly():
    ref = torch.arange(10)
    off = ref.clone()
    off[7] += 1
    assert compare([ref], [ref.clone()], {}).ok
    result = compare([ref], [off], {})
    assert not result.ok and "1 of 10 elements differ; first at index (7,): expected 7, got 8" in result.message
    # A problem's atol/rtol does not loosen an exact output.
    assert not compare([ref], [off], {"atol": 0.5, "rtol": 0.5}).ok
    mask = torch.tensor([True, False, True])
    assert not compare([mask], [torch.tensor([True, True, True])], {}).ok


def test_it_compares_a_0_dim_and_a_1_element_output():
    assert compare([torch.tensor(2.5)], [torch.tensor(2.5 * (1 + 1e-5))], {}).ok
    result = compare([torch.tensor(2.5)], [torch.tensor(2.6)], {})
    assert not result.ok and "index (): expected 2.5, got 2.6" in result.message
    assert not compare([torch.tensor([1.0])], [torch.tensor([0.0])], {}).ok


def test_it_holds_each_float_dtype_to_its_own_tolerance():
    ref64 = torch.randn(100, dtype=torch.float64)
    assert compare([ref64], [ref64 * (1 + 1e-8)], {}).ok
    assert not compare([ref64], [ref64 * (1 + 1e-4)], {}).ok  # fine for fp32, not for fp64
    ref_bf16 = torch.randn(100).bfloat16()
    assert compare([ref_bf16], [(ref_bf16.float() * 1.008).bfloat16()], {}).ok
    assert not compare([ref_bf16], [(ref_bf16.float() * 1.1).bfloat16()], {}).ok


def test_it_compares_complex_outputs_by_their_distance():
    ref = torch.randn(50, dtype=torch.complex64)
    assert compare([ref], [ref * (1 + 1e-5j)], {}).ok
    # Same magnitudes, rotated: only the complex distance sees it (comparing real parts alone would not).
    result = compare([ref], [ref * 1j], {})
    assert not result.ok and "j, got" in result.message
    assert not compare([ref], [ref.conj()], {}).ok


def test_it_accepts_nan_where_the_reference_has_nan_and_nowhere_else():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -2.0])
    assert compare([ref], [ref.clone()], {}).ok
    assert "NaN/Inf" in compare([ref], [torch.tensor([1.0, 0.0, float("inf"), -2.0])], {}).message
    assert "NaN/Inf" in compare([ref], [torch.tensor([1.0, float("nan"), float("-inf"), -2.0])], {}).message


def test_it_finds_reference_outputs_that_cannot_judge_anything():
    assert reference_problems([torch.randn(4), torch.arange(3), torch.tensor(float("nan")).expand(0)], {}) == []
    (nan,) = reference_problems([torch.full((3,), float("nan"))], {})
    assert "NaN or Inf in every element" in nan
    fp8 = torch.randn(8).to(torch.float8_e4m3fn)
    (no_tol,) = reference_problems([torch.ones(2), fp8], {})
    assert no_tol.startswith("output 1 is torch.float8_e4m3fn") and "set both atol and rtol" in no_tol
    assert reference_problems([fp8], {"atol": 0.1, "rtol": 0.1}) == []


def test_it_describes_nested_outputs_and_numbers():
    x = torch.ones(3)
    tensors, problems, structure = _flatten((x + 1, (x.sum(), 3, 2.5, True, None), [x * 2]))
    assert problems == []
    assert structure == "(tensor, (tensor, int, float, bool, None), (tensor,))"
    assert [t.dtype for t in tensors] == [torch.float32, torch.float32, torch.int64, torch.float32, torch.bool,
                                          torch.float32]
    assert tensors[3].item() == 2.5 and tensors[2].item() == 3
    assert _flatten(x + 1)[2] == "tensor" and _flatten(2.5)[2] == "float" and _flatten(None)[2] == "None"


def test_it_refuses_what_cannot_be_an_output():
    x = torch.ones(3)
    assert "does not fit a 64-bit tensor" in _flatten((x + 1, 1 << 70))[1][0]
    assert "not a plain torch.Tensor" in _flatten(torch.nn.Parameter(x + 1))[1][0]
    assert "return a plain tuple" in _flatten(torch.max(torch.ones(2, 3), dim=1))[1][0]
    assert "deeper than 8" in _flatten(((((((((((x + 1,),),),),),),),),),))[1][0]
    assert "Python numbers, None, or tuples" in _flatten({"y": x}, role="eager")[1][0]


def test_it_takes_the_references_output_as_it_is():
    x = torch.ones(3)
    # The trusted reference may return its input, a parameter or a named tuple; a solution may not.
    for role, expect_problem in (("eager", False), ("solution", True)):
        assert bool(_flatten(x, [x], role=role)[1]) is expect_problem
    tensors, problems, structure = _flatten(torch.max(torch.ones(2, 3), dim=1), role="eager")
    assert problems == [] and structure == "(tensor, tensor)"
    tensors, problems, _ = _flatten(torch.nn.Parameter(x + 1), role="compile")
    assert problems == [] and type(tensors[0]) is torch.Tensor


@pytest.mark.parametrize("value", [math.inf, -0.0, 1e-30])
def test_it_keeps_python_floats_as_float32(value):
    (t,), _, _ = _flatten(value)
    assert t.dtype == torch.float32
    assert t.item() == pytest.approx(value, rel=1e-6, abs=0) and math.copysign(1, t.item()) == math.copysign(1, value)
