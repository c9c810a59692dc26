"""The PyTorch eager and torch.compile rows come from the measured baselines, never from invented numbers."""

import pytest

from apps.leaderboard.selectors import leaderboard_rows
from apps.submissions.models import Entrant

from .builders import add_evaluation, make_entrant, make_pool, make_problem, make_submission, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def measured():
    pool = make_pool("h200")
    p1, p2, p3, _p4 = (make_problem(s, pools=(pool,)) for s in ("p1", "p2", "p3", "p4"))
    alice = make_entrant("Alice")
    # p1: measured twice; the latest measurement (eager 100, compile 80) is the baseline.
    result(alice, p1, pool, runtime_us=50, eager_us=110, compile_us=70)
    result(alice, p1, pool, runtime_us=40, eager_us=100, compile_us=80)
    # A failed submission still carries valid baseline timings.
    result(alice, p2, pool, verdict="wrong_answer", eager_us=200, compile_us=250)
    # p3: eager measured, torch.compile failed to run (no time).
    result(alice, p3, pool, runtime_us=100, eager_us=90, compile_us=None)
    # p4: nothing measured -> unattempted for both baselines.
    return pool


def test_it_always_lists_both_baselines_as_baseline_entrants(measured):
    rows = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}
    assert rows["pytorch-eager"].entrant == "PyTorch eager"
    assert rows["torch-compile"].entrant == "torch.compile"
    assert Entrant.objects.get(slug="pytorch-eager").kind == "baseline"
    assert rows["pytorch-eager"].is_baseline and rows["torch-compile"].is_baseline


def test_it_computes_eager_as_one_on_every_measured_problem(measured):
    eager = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}["pytorch-eager"]
    # Rates over the 3 problems where eager was measured: p4 is "not yet measured", not a failure.
    assert (eager.problems, eager.suite_size, eager.attempted, eager.solved) == (3, 4, 3, 3)
    assert eager.fast_0 == pytest.approx(1.0)
    assert eager.fast_1_vs_eager == 0  # 1.0 is not faster than itself
    assert eager.geomean_speedup_vs_eager == pytest.approx(1.0)
    # vs compile: p1 80/100 = 0.8, p2 250/200 = 1.25; p3 has no compile time.
    assert eager.fast_1_vs_compile == pytest.approx(1 / 3)
    assert eager.geomean_speedup_vs_compile == pytest.approx((0.8 * 1.25) ** 0.5)
    assert eager.geomean_count_vs_compile == 2


def test_it_computes_torch_compile_from_eager_over_compile_time(measured):
    comp = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}["torch-compile"]
    assert (comp.problems, comp.attempted, comp.solved) == (2, 2, 2)  # p3 has no compile time, p4 nothing
    assert comp.fast_1_vs_eager == pytest.approx(1 / 2)  # p1: 100/80 = 1.25; p2: 200/250 = 0.8
    assert comp.geomean_speedup_vs_eager == pytest.approx((1.25 * 0.8) ** 0.5)
    assert comp.fast_1_vs_compile == 0


def test_it_ignores_baseline_timings_of_moderated_submissions(measured):
    pool = measured
    p4 = pool.problems.get(slug="p4")
    result(make_entrant("Mallory"), p4, pool, runtime_us=1, eager_us=5, compile_us=5, moderation="hacked")
    eager = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}["pytorch-eager"]
    assert eager.solved == 3


def test_it_skips_unfinished_evaluations(measured):
    pool = measured
    p4 = pool.problems.get(slug="p4")
    add_evaluation(make_submission(make_entrant("Bob"), p4, pool), status="running", eager_us=None)
    rows = {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}
    assert "bob" not in rows
    assert rows["pytorch-eager"].solved == 3
