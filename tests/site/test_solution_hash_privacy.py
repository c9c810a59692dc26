"""The SHA-256 of a private source (the API's `sha256`, the evaluator's `statistics.solution_hash`, the page's
"sha256 ...") would let anyone confirm a guess of it: shown to the owner and staff only, until the source is."""

from apps.submissions.models import Evaluation, Submission
from tests.site.conftest import submit


def _finished_with_hash(submission_id: int) -> str:
    digest = Submission.objects.get(pk=submission_id).sha256
    Evaluation.objects.filter(submission_id=submission_id).update(
        status="done", stage="done", verdict="accepted", correct=True, runtime_us=5.0,
        result={"verdict": "accepted", "solution_hash": digest, "problem_hash": "p" * 64, "runtime_us": 5.0})
    return digest


def test_another_entrant_sees_neither_hash_in_the_api(problem, alice, bob, api):
    submission_id = submit(api(alice.token)).json()["id"]
    digest = _finished_with_hash(submission_id)
    response = api(bob.token).get(f"/api/v1/submissions/{submission_id}/")
    body = response.json()
    assert body["verdict"] == "accepted" and body["sha256"] is None
    assert "solution_hash" not in body["statistics"] and body["statistics"]["problem_hash"] == "p" * 64
    assert digest not in response.content.decode()
    assert digest not in api().get(f"/api/v1/submissions/{submission_id}/").content.decode()


def test_the_owner_and_staff_see_it(problem, alice, charlie, api):
    submission_id = submit(api(alice.token)).json()["id"]
    digest = _finished_with_hash(submission_id)
    body = api(alice.token).get(f"/api/v1/submissions/{submission_id}/").json()
    assert body["sha256"] == digest and body["statistics"]["solution_hash"] == digest
    charlie.is_staff = True
    charlie.save()
    staff = api()
    staff.force_authenticate(charlie)
    assert staff.get(f"/api/v1/submissions/{submission_id}/").json()["statistics"]["solution_hash"] == digest


def test_the_page_hides_it_from_others_and_shows_it_to_the_owner(problem, alice, bob, api, client):
    submission_id = submit(api(alice.token)).json()["id"]
    digest = _finished_with_hash(submission_id)
    client.force_login(bob.user)
    page = client.get(f"/submissions/{submission_id}/").content.decode()
    assert "Accepted" in page or "accepted" in page
    assert digest[:16] not in page
    client.force_login(alice.user)
    assert digest[:16] in client.get(f"/submissions/{submission_id}/").content.decode()


def test_a_published_source_shows_its_hash(problem, alice, bob, api):
    submission_id = submit(api(alice.token)).json()["id"]
    digest = _finished_with_hash(submission_id)
    alice.entrant.sources_public = True
    alice.entrant.save()
    body = api(bob.token).get(f"/api/v1/submissions/{submission_id}/").json()
    assert body["sha256"] == digest and body["statistics"]["solution_hash"] == digest
