"""The admin actions ask for a reason, then moderate through the service (logged)."""

import pytest
from django.contrib.admin import helpers
from django.contrib.auth import get_user_model
from django.test import Client

from apps.leaderboard.models import ModerationAction

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client():
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def evaluation():
    pool = make_pool("h200")
    return result(make_entrant("Bob"), make_problem("p1", pools=(pool,)), pool, runtime_us=10)


def test_it_asks_for_a_reason_then_marks_the_submission_hacked(admin_client, evaluation):
    url = "/admin/submissions/submission/"
    form = {"action": "mark_hacked", helpers.ACTION_CHECKBOX_NAME: [evaluation.submission_id]}
    page = admin_client.post(url, form)
    assert page.status_code == 200
    assert b"Reason (logged, and shown to the owner)" in page.content
    assert not ModerationAction.objects.exists()

    done = admin_client.post(url, {**form, "apply": "1", "reason": "Returns the cached answer."})
    assert done.status_code == 302
    evaluation.submission.refresh_from_db()
    assert (evaluation.submission.moderation, evaluation.submission.moderation_reason) == (
        "hacked", "Returns the cached answer.")
    assert ModerationAction.objects.get().action == "mark_hacked"


def test_it_refuses_an_empty_reason(admin_client, evaluation):
    form = {"action": "mark_invalid", helpers.ACTION_CHECKBOX_NAME: [evaluation.submission_id], "apply": "1",
            "reason": " "}
    page = admin_client.post("/admin/submissions/submission/", form)
    assert b"Give a reason" in page.content
    evaluation.submission.refresh_from_db()
    assert evaluation.submission.moderation == "ok"


def test_it_bans_an_entrant_and_shows_the_log_read_only(admin_client, evaluation):
    bob = evaluation.submission.entrant
    form = {"action": "ban", helpers.ACTION_CHECKBOX_NAME: [bob.pk], "apply": "1", "reason": "Timer tampering."}
    assert admin_client.post("/admin/submissions/entrant/", form).status_code == 302
    bob.refresh_from_db()
    assert (bob.is_banned, bob.ban_reason) == (True, "Timer tampering.")
    log = admin_client.get("/admin/leaderboard/moderationaction/")
    assert b"Timer tampering." in log.content
    assert admin_client.get("/admin/leaderboard/moderationaction/add/").status_code == 403
