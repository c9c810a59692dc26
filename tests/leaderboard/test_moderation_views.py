"""The staff forms on the boards: POST only, staff only, a reason required; the board changes at once."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.leaderboard.models import ModerationAction

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluation():
    pool = make_pool("h200")
    return result(make_entrant("Bob"), make_problem("relu", pools=(pool,)), pool, runtime_us=10, eager_us=100)


def client_for(**flags):
    client = Client()
    client.force_login(get_user_model().objects.create_user(f"user{len(flags)}{flags}", **flags))
    return client


def test_it_takes_a_submission_off_the_board(evaluation):
    client = client_for(is_staff=True)
    url = f"/leaderboard/moderate/submissions/{evaluation.submission_id}/"
    page = client.post(url, {"moderation": "hacked", "reason": "Skips the computation.",
                             "next": "/leaderboard/h200/problems/relu/"}, follow=True)
    assert page.redirect_chain[-1][0] == "/leaderboard/h200/problems/relu/"
    html = page.content.decode()
    assert f"Submission #{evaluation.submission_id} by Bob is now hacked." in html
    assert 'data-entrant="bob"' not in html
    assert ModerationAction.objects.get().reason == "Skips the computation."


def test_it_refuses_non_staff_and_get(evaluation):
    url = f"/leaderboard/moderate/submissions/{evaluation.submission_id}/"
    response = client_for().post(url, {"moderation": "hacked", "reason": "x"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert client_for(is_staff=True).get(url).status_code == 405
    assert not ModerationAction.objects.exists()


def test_it_explains_a_missing_reason_and_ignores_foreign_next_urls(evaluation):
    url = f"/leaderboard/moderate/submissions/{evaluation.submission_id}/"
    page = client_for(is_staff=True).post(url, {"moderation": "hacked", "reason": "",
                                                "next": "https://evil.example/"}, follow=True)
    assert page.redirect_chain[-1][0] == "/leaderboard/h200/problems/relu/"
    assert "give a reason" in page.content.decode()
    evaluation.submission.refresh_from_db()
    assert evaluation.submission.moderation == "ok"


def test_it_bans_and_unbans_an_entrant(evaluation):
    client = client_for(is_staff=True)
    page = client.post("/leaderboard/moderate/entrants/bob/", {"banned": "on", "reason": "Spam.",
                                                               "next": "/leaderboard/h200/"}, follow=True)
    assert "Bob is banned from every board." in page.content.decode()
    assert 'data-entrant="bob"' not in page.content.decode()
    page = client.post("/leaderboard/moderate/entrants/bob/", {"reason": "Appeal.", "next": "/leaderboard/h200/"},
                       follow=True)
    assert 'data-entrant="bob"' in page.content.decode()
    assert list(ModerationAction.objects.order_by("id").values_list("action", flat=True)) == ["ban", "unban"]
