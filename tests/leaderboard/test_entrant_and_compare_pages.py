"""/leaderboard/<pool>/entrants/<slug>/ and /leaderboard/<pool>/compare/."""

import pytest
from django.test import Client

from apps.leaderboard.selectors import head_to_head
from apps.submissions.models import Entrant

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair():
    pool = make_pool("h200")
    p1, p2, p3 = (make_problem(s, pools=(pool,)) for s in ("p1", "p2", "p3"))
    ann, ben = make_entrant("Ann"), make_entrant("Ben", "llm")
    result(ann, p1, pool, runtime_us=50, eager_us=100)
    result(ben, p1, pool, runtime_us=25, eager_us=100)
    result(ann, p2, pool, runtime_us=40, eager_us=100)
    result(ben, p2, pool, runtime_us=40, eager_us=100)
    result(ann, p3, pool, runtime_us=90, eager_us=100, moderation="hacked")
    result(ben, p3, pool, verdict="runtime_error")
    return pool


def test_it_counts_wins_ties_and_unsolved_problems(pair):
    h2h = head_to_head(pool="h200", a="ann", b="ben")
    assert [(p["problem"].slug, p["winner"]) for p in h2h["problems"]] == [
        ("p1", "b"), ("p2", "tie"), ("p3", None)]
    assert (h2h["wins_a"], h2h["wins_b"], h2h["ties"]) == (0, 1, 1)
    assert h2h["a"]["solved"] == 2 and h2h["b"]["geomean_speedup_vs_eager"] == pytest.approx((4 * 2.5) ** 0.5)


def test_it_renders_the_comparison_and_its_plot(pair):
    html = Client().get("/leaderboard/h200/compare/?a=ann&b=ben").content.decode()
    assert "Problems won" in html and 'data-figure="fig-h2h"' in html


def test_it_explains_bad_choices(pair):
    assert "Pick two different entrants." in Client().get("/leaderboard/h200/compare/?a=ann&b=ann").content.decode()
    html = Client().get("/leaderboard/h200/compare/?a=ann&b=zed").content.decode()
    assert "&#x27;zed&#x27; has no counted result on h200" in html


def test_it_shows_an_entrants_stats_trend_and_history_with_moderation(pair):
    from apps.submissions.models import Submission

    Submission.objects.filter(moderation="hacked").update(moderation_reason="Reads the expected output.")
    html = Client().get("/leaderboard/h200/entrants/ann/").content.decode()
    assert "66.7%" in html  # fast_0: 2 of 3
    assert 'data-figure="fig-trend"' in html
    assert "Hacked" in html  # the moderated p3 submission stays in the history
    assert "Reads the expected output." not in html  # the reason is for the owner and staff
    owner = Client()
    owner.force_login(Entrant.objects.get(slug="ann").owner)
    assert "Reads the expected output." in owner.get("/leaderboard/h200/entrants/ann/").content.decode()
    assert Client().get("/leaderboard/h200/entrants/nobody/").status_code == 404


def test_it_shows_a_baseline_entrant(pair):
    html = Client().get("/leaderboard/h200/entrants/pytorch-eager/").content.decode()
    assert "PyTorch eager" in html and "100.0%" in html  # measured on all 3 problems
