"""leaderboard_rows: best submission per problem, rates over the whole suite, geometric mean over solved."""

import math

import pytest

from apps.leaderboard.selectors import leaderboard_rows

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def suite():
    pool = make_pool("h200")
    p1, p2, p3 = (make_problem(s, level=1, pools=(pool,)) for s in ("p1", "p2", "p3"))
    make_problem("p4", level=2, pools=(pool,))  # level 2, never attempted
    alice = make_entrant("Alice", "agent")
    # p1: two accepted submissions; the faster (40 us) counts: 2.5x eager, 2.0x compile.
    result(alice, p1, pool, runtime_us=50, eager_us=100, compile_us=80)
    result(alice, p1, pool, runtime_us=40, eager_us=100, compile_us=80)
    # p2: failed. p3: correct but slower than eager (0.9x), faster than compile (1.2x). p4: not attempted.
    result(alice, p2, pool, verdict="wrong_answer", eager_us=200, compile_us=250)
    result(alice, p3, pool, runtime_us=100, eager_us=90, compile_us=120)
    return pool, alice


def by_slug(rows):
    return {r.entrant_slug: r for r in rows}


def test_it_counts_the_best_accepted_submission_per_problem_over_the_whole_suite(suite):
    row = by_slug(leaderboard_rows(pool="h200"))["alice"]
    assert (row.problems, row.attempted, row.solved) == (4, 3, 2)
    assert row.fast_0 == pytest.approx(2 / 4)
    assert row.fast_1_vs_eager == pytest.approx(1 / 4)  # only p1 beats eager
    assert row.fast_1_vs_compile == pytest.approx(2 / 4)  # p1 (2.0x) and p3 (1.2x)


def test_it_takes_the_geometric_mean_over_solved_problems_only(suite):
    row = by_slug(leaderboard_rows(pool="h200"))["alice"]
    assert row.geomean_speedup_vs_eager == pytest.approx(math.sqrt(2.5 * 0.9))
    assert row.geomean_speedup_vs_compile == pytest.approx(math.sqrt(2.0 * 1.2))
    assert (row.geomean_count_vs_eager, row.geomean_count_vs_compile) == (2, 2)


def test_it_uses_strictly_greater_than_p(suite):
    row = by_slug(leaderboard_rows(pool="h200", p=2.0))["alice"]
    assert row.p == 2.0
    assert row.fast_p_vs_eager == pytest.approx(1 / 4)  # 2.5 > 2
    assert row.fast_p_vs_compile == 0  # 2.0 is not > 2.0
    # fast_1 fields stay at p = 1 whatever p is asked for.
    assert row.fast_1_vs_compile == pytest.approx(2 / 4)


def test_it_makes_fast_p_at_zero_the_correctness_rate(suite):
    row = by_slug(leaderboard_rows(pool="h200", p=0.0))["alice"]
    assert row.fast_p_vs_eager == row.fast_0 == pytest.approx(0.5)


def test_it_restricts_the_suite_to_a_level(suite):
    row = by_slug(leaderboard_rows(pool="h200", level=1))["alice"]
    assert (row.problems, row.solved) == (3, 2)
    assert row.fast_0 == pytest.approx(2 / 3)
    assert row.fast_1_vs_eager == pytest.approx(1 / 3)
    rows = by_slug(leaderboard_rows(pool="h200", level=2))
    assert "alice" not in rows  # nothing attempted at level 2
    assert rows["pytorch-eager"].suite_size == 1  # its `problems`: those measured (none)


def test_it_ignores_problems_of_another_pool_and_inactive_problems(suite):
    pool, alice = suite
    other = make_pool("cpu")
    result(alice, make_problem("elsewhere", pools=(other,)), other, runtime_us=1, eager_us=100)
    retired = make_problem("retired", pools=(pool,), active=False)
    result(alice, retired, pool, runtime_us=1, eager_us=100)
    row = by_slug(leaderboard_rows(pool="h200"))["alice"]
    assert (row.problems, row.attempted, row.solved) == (4, 3, 2)
    assert by_slug(leaderboard_rows(pool="cpu"))["alice"].solved == 1


def test_it_gives_empty_rates_for_an_empty_suite(db):
    make_pool("h100")
    rows = leaderboard_rows(pool="h100")
    assert [r.entrant_slug for r in rows] == ["pytorch-eager", "torch-compile"]
    assert all(r.fast_0 is None and r.geomean_speedup_vs_eager is None and r.solved == 0 for r in rows)
