"""GET /api/v1/submissions/{id}/: status and timings for all, source and logs for the owner until revealed."""

from datetime import timedelta

from django.utils import timezone

from apps.submissions.models import Evaluation
from tests.site.conftest import SOLUTION_SOURCE, error_of, submit


def _finished(submission_id, verdict="compile_error"):
    Evaluation.objects.filter(submission_id=submission_id).update(
        status="done", stage="done", verdict=verdict, message="error: line 3: add_one_secret_trick",
        log="g++ ... add_one_secret_trick", result={"verdict": verdict, "log": "add_one_secret_trick",
                                                    "message": "add_one_secret_trick", "n": 5})


def test_the_owner_sees_the_source_and_the_log(problem, alice, api):
    submission_id = submit(api(alice.token)).json()["id"]
    _finished(submission_id)
    body = api(alice.token).get(f"/api/v1/submissions/{submission_id}/").json()
    assert body["source"] == SOLUTION_SOURCE and body["source_visible"] is True
    assert "add_one_secret_trick" in body["log"]
    assert "add_one_secret_trick" in body["message"]
    assert body["statistics"]["log"] == "add_one_secret_trick"


def test_bob_sees_the_verdict_but_not_alices_source(problem, alice, bob, api):
    submission_id = submit(api(alice.token)).json()["id"]
    _finished(submission_id)
    response = api(bob.token).get(f"/api/v1/submissions/{submission_id}/")
    assert response.status_code == 200
    body = response.json()
    assert body["verdict"] == "compile_error" and body["status"] == "done"
    assert body["source"] is None and body["source_visible"] is False and body["log"] is None
    # A compiler message quotes the source: it stays private too.
    assert "add_one_secret_trick" not in response.content.decode()
    assert body["statistics"] == {"verdict": "compile_error", "n": 5}


def test_anonymous_readers_see_the_status_without_the_source(problem, alice, api):
    submission_id = submit(api(alice.token)).json()["id"]
    body = api().get(f"/api/v1/submissions/{submission_id}/").json()
    assert body["status"] == "queued" and body["source"] is None


def test_a_published_entrants_source_is_public(problem, alice, bob, api):
    submission_id = submit(api(alice.token)).json()["id"]
    alice.entrant.sources_public = True
    alice.entrant.save()
    assert api(bob.token).get(f"/api/v1/submissions/{submission_id}/").json()["source"] == SOLUTION_SOURCE


def test_the_source_is_public_after_the_problems_reveal_date(problem, alice, bob, api):
    submission_id = submit(api(alice.token)).json()["id"]
    problem.reveal_at = timezone.now() + timedelta(days=1)
    problem.save()
    assert api(bob.token).get(f"/api/v1/submissions/{submission_id}/").json()["source"] is None
    problem.reveal_at = timezone.now() - timedelta(seconds=1)
    problem.save()
    assert api(bob.token).get(f"/api/v1/submissions/{submission_id}/").json()["source"] == SOLUTION_SOURCE


def test_staff_see_every_source(problem, alice, charlie, api):
    submission_id = submit(api(alice.token)).json()["id"]
    charlie.is_staff = True
    charlie.save()
    client = api()
    client.force_login(charlie)
    assert client.get(f"/api/v1/submissions/{submission_id}/").json()["source"] == SOLUTION_SOURCE


def test_an_unknown_submission_is_a_404_in_the_error_shape(db, api):
    response = api().get("/api/v1/submissions/999999/")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"



def test_bob_sees_neither_a_runtime_errors_traceback_nor_the_sources_hash(problem, alice, bob, api):
    # A traceback or the anti-cheat's evidence can quote the source; the hash would confirm a guess of it.
    submission_id = submit(api(alice.token)).json()["id"]
    for verdict in ("runtime_error", "rejected"):
        _finished(submission_id, verdict=verdict)
        body = api(bob.token).get(f"/api/v1/submissions/{submission_id}/").json()
        assert body["verdict"] == verdict and body["sha256"] is None
        assert "add_one_secret_trick" not in str(body)
        assert "owner only" in body["message"]
    assert api(alice.token).get(f"/api/v1/submissions/{submission_id}/").json()["sha256"]


def test_a_wrong_answers_mismatch_is_public(problem, alice, bob, api):
    # Index, expected and got quote no code: everyone may see why it was wrong.
    submission_id = submit(api(alice.token)).json()["id"]
    _finished(submission_id, verdict="wrong_answer")
    assert "add_one_secret_trick" in api(bob.token).get(f"/api/v1/submissions/{submission_id}/").json()["message"]
