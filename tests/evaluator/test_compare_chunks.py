"""The chunked fast path of correctness.compare agrees with the whole-tensor check, across chunk borders."""

import pytest
import torch

from gpu_runner import correctness


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(correctness, "CHUNK", 1000)


def whole(expected, got, meta=None):
    """The full check alone (the fast path turned off)."""
    fast = correctness._passing_in_chunks
    correctness._passing_in_chunks = lambda *args: None
    try:
        return correctness.compare(expected, got, meta or {})
    finally:
        correctness._passing_in_chunks = fast


@pytest.mark.parametrize(("dtype", "noise"), [(torch.float32, 1e-4), (torch.float64, 1e-7), (torch.float16, 1e-3),
                                              (torch.bfloat16, 1e-3)])
def test_a_passing_output_gets_the_same_figures(small_chunks, dtype, noise):
    g = torch.Generator().manual_seed(1)
    ref = torch.randn(7, 1234, generator=g).to(dtype)
    out = (ref.double() * (1 + noise * torch.randn(7, 1234, generator=g, dtype=torch.float64))).to(dtype)
    fast, full = correctness.compare([ref], [out], {}), whole([ref], [out])
    assert fast.ok and full.ok
    assert fast.max_abs_err == pytest.approx(full.max_abs_err, rel=1e-5)
    assert fast.max_rel_err == pytest.approx(full.max_rel_err, rel=1e-5)
    assert fast.rel_fro_err == pytest.approx(full.rel_fro_err, rel=1e-4)


def test_one_bad_element_in_a_late_chunk_fails_with_its_index(small_chunks):
    ref = torch.randn(10_000)
    out = ref.clone()
    out[9_876] += 1.0
    result = correctness.compare([ref], [out], {})
    assert not result.ok and "index (9876,)" in result.message


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_values_at_the_same_places_pass_and_elsewhere_fail(small_chunks, value):
    ref = torch.randn(5_000)
    ref[4_321] = value
    assert correctness.compare([ref], [ref.clone()], {}).ok
    moved = ref.clone()
    moved[4_321], moved[17] = 0.0, value
    result = correctness.compare([ref], [moved], {})
    assert not result.ok and "NaN/Inf" in result.message


def test_zeros_for_a_small_output_still_fail_the_magnitude_check(small_chunks):
    ref = torch.randn(5_000) * 1e-5
    result = correctness.compare([ref], [torch.zeros_like(ref)], {})
    assert not result.ok and "relative error" in result.message
