"""leaderboard_rows is cached under a signature of its inputs: a hit costs a few queries, and any result,
moderation or suite change is seen at once."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.leaderboard.selectors import leaderboard_rows
from apps.leaderboard.services import entrant_ban, submission_moderate

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    pool = make_pool("h200")
    p1 = make_problem("p1", pools=(pool,))
    ann = make_entrant("Ann")
    first = result(ann, p1, pool, runtime_us=50, eager_us=100)
    return pool, p1, ann, first


def solved(slug):
    return {r.entrant_slug: r.solved for r in leaderboard_rows(pool="h200")}.get(slug)


def test_it_serves_a_repeat_from_the_cache(board):
    leaderboard_rows(pool="h200")
    with CaptureQueriesContext(connection) as ctx:
        rows = leaderboard_rows(pool="h200")
    assert len(ctx.captured_queries) == 3  # the suite and the two signature aggregates
    assert rows[0].entrant_slug == "ann"


def test_it_sees_a_new_result_at_once(board):
    pool, p1, ann, _ = board
    assert solved("ben") is None
    result(make_entrant("Ben"), p1, pool, runtime_us=20, eager_us=100)
    assert solved("ben") == 1
    assert leaderboard_rows(pool="h200")[0].entrant_slug == "ben"


def test_it_sees_moderation_and_bans_at_once(board):
    _, _, ann, first = board
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    assert solved("ann") == 1
    submission_moderate(submission=first.submission, moderation="hacked", reason="x", actor=staff)
    assert solved("ann") is None  # its only submission is out: nothing left to rank
    submission_moderate(submission=first.submission, moderation="ok", reason="y", actor=staff)
    assert solved("ann") == 1
    entrant_ban(entrant=ann, reason="z", actor=staff)
    assert solved("ann") is None


def test_it_sees_a_problem_leave_the_suite(board):
    pool, p1, _, _ = board
    make_problem("p2", pools=(pool,))
    assert leaderboard_rows(pool="h200")[0].suite_size == 2
    p1.is_active = False
    p1.save()
    assert leaderboard_rows(pool="h200")[0].suite_size == 1
