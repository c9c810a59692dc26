"""Checked timing batches stay within memory, and their checks within a byte budget, for outputs of any size."""

from gpu_runner import timing


def test_small_outputs_keep_the_full_batch_and_a_third_checked():
    assert timing.batch_limits("cuda", 4 << 20) == (100, 512)
    assert timing.batch_limits("cpu", 0) == (100, 100)


def test_gigabyte_outputs_shorten_the_batch_and_check_one_call_per_batch():
    longest, checks = timing.batch_limits("cuda", 2 << 30)
    assert longest * (2 << 30) <= timing.KEEP_BYTES["cuda"]
    assert checks == 1


def test_a_batch_is_never_shorter_than_the_minimum():
    longest, checks = timing.batch_limits("cuda", 64 << 30)
    assert longest == timing.MIN_BATCH and checks == 1
