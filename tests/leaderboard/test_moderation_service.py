"""The moderation services: staff only, a reason required, every action logged."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError

from apps.leaderboard.models import ModerationAction
from apps.leaderboard.selectors import baseline_entrants
from apps.leaderboard.services import entrant_ban, submission_moderate

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluation():
    pool = make_pool("h200")
    return result(make_entrant("Bob"), make_problem("p1", pools=(pool,)), pool, runtime_us=10)


@pytest.fixture
def staff():
    return get_user_model().objects.create_user("sam", is_staff=True)


def test_it_logs_who_marked_what_and_why(evaluation, staff):
    submission_moderate(submission=evaluation.submission, moderation="hacked", reason="Reads the answer.",
                        actor=staff)
    action = ModerationAction.objects.get()
    assert (action.actor, action.action, action.submission, action.reason) == (
        staff, "mark_hacked", evaluation.submission, "Reads the answer.")
    assert action.entrant_id == evaluation.submission.entrant_id
    evaluation.submission.refresh_from_db()
    assert (evaluation.submission.moderation, evaluation.submission.moderation_reason) == (
        "hacked", "Reads the answer.")


def test_it_refuses_non_staff(evaluation):
    charlie = get_user_model().objects.create_user("charlie")
    with pytest.raises(PermissionDenied):
        submission_moderate(submission=evaluation.submission, moderation="hacked", reason="x", actor=charlie)
    with pytest.raises(PermissionDenied):
        entrant_ban(entrant=evaluation.submission.entrant, reason="x", actor=charlie)
    assert not ModerationAction.objects.exists()


def test_it_requires_a_reason_and_a_known_status(evaluation, staff):
    with pytest.raises(ValidationError, match="reason"):
        submission_moderate(submission=evaluation.submission, moderation="hacked", reason="  ", actor=staff)
    with pytest.raises(ValidationError, match="hacked, invalid or ok"):
        submission_moderate(submission=evaluation.submission, moderation="bogus", reason="x", actor=staff)
    evaluation.submission.refresh_from_db()
    assert evaluation.submission.moderation == "ok"


def test_it_logs_bans_and_refuses_to_ban_a_baseline(evaluation, staff):
    bob = evaluation.submission.entrant
    entrant_ban(entrant=bob, reason="Spam.", actor=staff)
    bob.refresh_from_db()
    assert (bob.is_banned, bob.ban_reason) == (True, "Spam.")
    assert ModerationAction.objects.get().action == "ban"
    with pytest.raises(ValidationError, match="baselines"):
        entrant_ban(entrant=baseline_entrants()["pytorch-eager"], reason="x", actor=staff)
