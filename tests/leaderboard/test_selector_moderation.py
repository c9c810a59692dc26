"""Moderated-out submissions and banned entrants leave the rankings; their rows stay for audit."""

import pytest
from django.contrib.auth import get_user_model

from apps.leaderboard.selectors import entrant_history, leaderboard_rows, problem_board
from apps.leaderboard.services import entrant_ban, submission_moderate

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff():
    return get_user_model().objects.create_user("sam", is_staff=True)


@pytest.fixture
def board():
    pool = make_pool("h200")
    p1, p2 = make_problem("p1", pools=(pool,)), make_problem("p2", pools=(pool,))
    bob = make_entrant("Bob", "llm")
    honest = result(bob, p1, pool, runtime_us=50, eager_us=100)
    cheat = result(bob, p2, pool, runtime_us=1, eager_us=100)
    return pool, bob, honest, cheat


def row(slug):
    return {r.entrant_slug: r for r in leaderboard_rows(pool="h200")}.get(slug)


def test_it_drops_a_submission_marked_hacked(board, staff):
    _, _, _, cheat = board
    assert row("bob").solved == 2
    submission_moderate(submission=cheat.submission, moderation="hacked", reason="Caches the output.", actor=staff)
    r = row("bob")
    assert (r.attempted, r.solved) == (1, 1)
    assert r.geomean_speedup_vs_eager == pytest.approx(2.0)
    assert [e["entrant_slug"] for e in problem_board(slug="p2", pool="h200") if not e["is_baseline"]] == []


def test_it_keeps_the_moderated_submission_in_the_history_with_its_reason(board, staff):
    _, _, _, cheat = board
    submission_moderate(submission=cheat.submission, moderation="invalid", reason="Wrong dtype.", actor=staff)
    history = {h["submission_id"]: h for h in entrant_history(entrant_slug="bob", pool="h200")}
    assert history[cheat.submission_id]["submission__moderation"] == "invalid"
    assert history[cheat.submission_id]["submission__moderation_reason"] == "Wrong dtype."


def test_it_restores_a_submission(board, staff):
    _, _, _, cheat = board
    submission_moderate(submission=cheat.submission, moderation="hacked", reason="Suspicious.", actor=staff)
    submission_moderate(submission=cheat.submission, moderation="ok", reason="Checked by hand: fine.", actor=staff)
    assert row("bob").solved == 2
    cheat.submission.refresh_from_db()
    assert cheat.submission.moderation_reason == ""


def test_it_removes_a_banned_entrant_and_brings_it_back_when_lifted(board, staff):
    _, bob, _, _ = board
    entrant_ban(entrant=bob, reason="Exploited the timer.", actor=staff)
    assert row("bob") is None
    # Gone from the problem board too, with the baseline timings it carried (they may be tampered with).
    assert problem_board(slug="p1", pool="h200") == []
    entrant_ban(entrant=bob, reason="Appeal accepted.", actor=staff, banned=False)
    assert row("bob").solved == 2
