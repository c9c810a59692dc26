"""Timing statistics and the output comparison the Mac applies: pure logic, run here."""

import numpy as np
import pytest

from ane_runner.macos import outputs_compare, timing_stats


def test_it_takes_the_median_and_nearest_rank_p90():
    stats = timing_stats([0.005, 0.001, 0.002, 0.004, 0.003, 0.010, 0.006, 0.007, 0.008, 0.009])
    assert stats["median_us"] == pytest.approx(5500.0)
    assert stats["p90_us"] == pytest.approx(9000.0)
    assert stats["min_us"] == pytest.approx(1000.0)
    assert stats["calls"] == 10
    assert timing_stats([0.002, 0.001, 0.003])["median_us"] == pytest.approx(2000.0)
    with pytest.raises(ValueError):
        timing_stats([])


def test_it_accepts_fp16_rounding_within_tolerance():
    want = np.linspace(-4, 4, 4096, dtype=np.float32).reshape(1, 64, 1, 64)
    got = want.astype(np.float16)
    assert outputs_compare([got], [want], atol=2e-2, rtol=2e-2) is None


def test_it_names_what_is_wrong():
    want = np.ones((1, 8, 1, 32), np.float32)
    off = want.copy()
    off[0, 3, 0, 5] = 2.0
    assert "1 of 256 values outside" in outputs_compare([off], [want], atol=1e-2, rtol=1e-2)
    nan = want.copy()
    nan[0, 0, 0, 0] = np.nan
    assert "NaN" in outputs_compare([nan], [want], atol=1e-2, rtol=1e-2)
    assert "shape" in outputs_compare([want.reshape(1, 8, 32, 1)], [want], atol=1e-2, rtol=1e-2)
    assert "2 outputs" in outputs_compare([want, want], [want], atol=1e-2, rtol=1e-2)
