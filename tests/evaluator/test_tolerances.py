import torch

from gpu_runner.correctness import compare


def test_it_passes_fp32_rounding_noise_and_fails_a_real_error():
    ref = torch.randn(64, 64)
    assert compare([ref], [ref + 1e-6 * torch.randn(64, 64)], {}).ok
    bad = ref.clone()
    bad[3, 7] += 0.5
    result = compare([ref], [bad], {})
    assert not result.ok
    assert "index (3, 7)" in result.message


def test_it_fails_zeros_on_outputs_smaller_than_atol():
    ref = torch.rand(1000) * 1e-5
    result = compare([ref], [torch.zeros(1000)], {})
    assert not result.ok and "relative error" in result.message
    assert compare([ref], [ref * (1 + 1e-6)], {}).ok


def test_it_fails_nan_where_the_reference_has_a_number_and_checks_shape_and_dtype():
    ref = torch.ones(10)
    got = ref.clone()
    got[4] = float("nan")
    assert "NaN" in compare([ref], [got], {}).message
    assert "shape" in compare([ref], [torch.ones(11)], {}).message
    assert "dtype" in compare([ref], [torch.ones(10, dtype=torch.float64)], {}).message


def test_it_uses_looser_tolerances_for_half_precision_and_the_problems_own():
    ref = torch.randn(100).half()
    assert compare([ref], [(ref.float() * 1.004).half()], {}).ok
    ref32 = torch.randn(100)
    assert not compare([ref32], [ref32 * 1.004], {}).ok
    assert compare([ref32], [ref32 * 1.004], {"atol": 1e-2, "rtol": 1e-2}).ok
