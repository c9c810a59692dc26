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


def test_short_batches_regenerate_half_their_sets_so_the_exit_rule_is_met_in_few_batches():
    import random

    rng = random.Random(3)
    # Gigabyte outputs: batches of 2 to 9 calls (timing.run_timing's `short`). Half of each batch is fresh, the
    # other half reused, so FRESH_MIN_CALLS of each kind take about 2 x FRESH_MIN_CALLS / batch batches.
    for batch, run_calls in ((2, 1), (4, 8), (4, 1), (9, 8)):
        fresh = timing._fresh_positions(rng, batch, run_calls, half=True)
        assert len(fresh) == batch // 2
        assert batch - len(fresh) >= len(fresh)  # never fewer reused calls than fresh ones: the audit's calls
        if run_calls > 1:
            assert max(fresh) - min(fresh) == len(fresh) - 1
    # Long batches keep a quarter, half or not.
    assert len(timing._fresh_positions(rng, 40, 8, half=False)) == 10
    assert 2 * timing.FRESH_MIN_CALLS > timing.MIN_BATCH  # the minimum batch is a short one
