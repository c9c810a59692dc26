"""Ranks with ties, several submissions per problem, and re-runs (the latest measurement counts)."""

import pytest

from apps.leaderboard.selectors import leaderboard_rows, problem_board

from .builders import add_evaluation, make_entrant, make_pool, make_problem, make_submission, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool():
    return make_pool("h200")


def test_it_gives_equal_entrants_the_same_rank_and_skips_the_next(pool):
    p1, p2 = make_problem("p1", pools=(pool,)), make_problem("p2", pools=(pool,))
    for name in ("Ann", "Ben"):
        result(make_entrant(name), p1, pool, runtime_us=50, eager_us=100, compile_us=100)
    carl = make_entrant("Carl")
    result(carl, p1, pool, runtime_us=80, eager_us=100, compile_us=100)
    result(carl, p2, pool, verdict="timeout")
    ranks = {r.entrant_slug: r.rank for r in leaderboard_rows(pool="h200")}
    # Ann and Ben: fast_1 0.5 each -> rank 1 together; Carl: fast_1 0.5 too (1.25x) but lower geomean -> 3.
    assert ranks["ann"] == ranks["ben"] == 1
    assert ranks["carl"] == 3
    # Baselines: eager solved p1 at 1.0x -> fast_1 0 -> below everyone.
    assert ranks["pytorch-eager"] == ranks["torch-compile"] == 4


def test_it_ranks_a_problem_board_by_runtime_with_ties_sharing_a_place(pool):
    p1 = make_problem("p1", pools=(pool,))
    result(make_entrant("Ann"), p1, pool, runtime_us=50, eager_us=100, compile_us=60)
    result(make_entrant("Ben"), p1, pool, runtime_us=50, eager_us=100, compile_us=60)
    cy = make_entrant("Cy")
    result(cy, p1, pool, runtime_us=200, eager_us=100, compile_us=60)
    result(cy, p1, pool, runtime_us=70, eager_us=100, compile_us=60)  # Cy's best of two
    board = problem_board(slug="p1", pool="h200")
    assert [(e["entrant_slug"], e["rank"], e["runtime_us"]) for e in board] == [
        ("ann", 1, 50), ("ben", 1, 50), ("torch-compile", None, 60), ("cy", 3, 70), ("pytorch-eager", None, 100)
    ]
    assert board[3]["speedup_vs_eager"] == pytest.approx(100 / 70)


def test_it_counts_only_the_latest_evaluation_of_a_rerun_submission(pool):
    p1 = make_problem("p1", pools=(pool,))
    sub = make_submission(make_entrant("Ann"), p1, pool)
    add_evaluation(sub, runtime_us=10, eager_us=100, minutes=1)
    add_evaluation(sub, runtime_us=40, eager_us=100, minutes=2)  # the re-run measured it slower
    row = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}["ann"]
    assert row.geomean_speedup_vs_eager == pytest.approx(2.5)


def test_it_drops_a_submission_whose_rerun_failed(pool):
    p1 = make_problem("p1", pools=(pool,))
    sub = make_submission(make_entrant("Ann"), p1, pool)
    add_evaluation(sub, runtime_us=10, eager_us=100, minutes=1)
    add_evaluation(sub, verdict="wrong_answer", minutes=2)
    add_evaluation(sub, status="running", eager_us=None, minutes=3)  # an unfinished re-run changes nothing
    row = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}["ann"]
    assert (row.attempted, row.solved, row.fast_0) == (1, 0, 0.0)
