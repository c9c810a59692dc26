"""POST /api/v1/submissions/: who may submit, as whom, and what comes back."""

from apps.submissions.models import Evaluation, Submission
from tests.site.conftest import SOLUTION_SOURCE, error_of, submit


def test_it_creates_a_submission_and_a_queued_evaluation(problem, alice, api):
    response = submit(api(alice.token), language="cpp", hardware="cpu")
    assert response.status_code == 201, response.json()
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert submission.entrant == alice.entrant
    assert submission.problem == problem
    assert submission.pool.slug == "cpu"
    assert body["status"] == "queued" and body["stage"] == "queued" and body["verdict"] is None
    assert body["duplicate"] is False
    assert body["source"] == SOLUTION_SOURCE  # the owner sees the source
    assert Evaluation.objects.filter(submission=submission, status="queued").count() == 1


def test_it_defaults_to_the_cpu_pool_and_detects_the_language(problem, alice, api):
    response = submit(api(alice.token))
    assert response.status_code == 201, response.json()
    assert response.json()["hardware"] == "cpu"
    assert response.json()["language"] == "cpp"


def test_it_refuses_without_a_token(problem, api):
    response = submit(api())
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Token"
    assert error_of(response)["code"] == "not_authenticated"


def test_it_refuses_a_wrong_token(problem, api):
    response = submit(api("kh_not-a-real-token"))
    assert response.status_code == 401
    assert error_of(response)["code"] == "authentication_failed"


def test_it_refuses_a_revoked_token(problem, alice, api):
    from apps.submissions.services import api_token_revoke

    api_token_revoke(token=alice.entrant.tokens.get())
    assert submit(api(alice.token)).status_code == 401


def test_bob_cannot_submit_as_alices_entrant(problem, alice, bob, api):
    response = submit(api(bob.token), entrant=alice.entrant.slug)
    assert response.status_code == 403
    assert alice.entrant.slug in error_of(response)["message"]
    assert not Submission.objects.exists()


def test_a_logged_in_user_submits_as_the_entrant_they_own(problem, alice, api):
    client = api()
    client.force_login(alice.user)
    response = submit(client)
    assert response.status_code == 201, response.json()
    assert response.json()["entrant"] == alice.entrant.slug


def test_a_logged_in_user_cannot_pick_someone_elses_entrant(problem, alice, bob, api):
    client = api()
    client.force_login(bob.user)
    response = submit(client, entrant=alice.entrant.slug)
    assert response.status_code == 403


def test_charlie_without_an_entrant_is_forbidden(problem, charlie, api):
    client = api()
    client.force_login(charlie)
    response = submit(client)
    assert response.status_code == 403
    assert "no entrant" in error_of(response)["message"]


def test_a_banned_entrant_is_refused(problem, alice, api):
    alice.entrant.is_banned = True
    alice.entrant.ban_reason = "gamed the timer"
    alice.entrant.save()
    response = submit(api(alice.token))
    assert response.status_code == 403
    error = error_of(response)
    assert error["code"] == "banned" and "gamed the timer" in error["message"]
