"""The same source for the same problem and pool returns the existing evaluation unless a re-run is asked."""

from apps.submissions.models import Evaluation, Submission
from tests.site.conftest import submit


def test_the_same_source_returns_the_existing_submission(problem, alice, api):
    client = api(alice.token)
    first = submit(client).json()
    second = submit(client)
    assert second.status_code == 200
    assert second.json()["id"] == first["id"]
    assert second.json()["evaluation_id"] == first["evaluation_id"]
    assert second.json()["duplicate"] is True
    assert Evaluation.objects.count() == 1


def test_a_rerun_makes_a_new_evaluation_of_the_same_submission(problem, alice, api):
    client = api(alice.token)
    first = submit(client).json()
    rerun = submit(client, rerun=True)
    assert rerun.status_code == 201
    assert rerun.json()["id"] == first["id"]
    assert rerun.json()["evaluation_id"] != first["evaluation_id"]
    assert Evaluation.objects.filter(submission_id=first["id"]).count() == 2


def test_another_entrant_with_the_same_source_gets_its_own_submission(problem, alice, bob, api):
    first = submit(api(alice.token)).json()
    second = submit(api(bob.token))
    assert second.status_code == 201
    assert second.json()["id"] != first["id"]


def test_a_failed_evaluation_is_retried_by_submitting_again(problem, alice, api):
    client = api(alice.token)
    first = submit(client).json()
    Evaluation.objects.filter(pk=first["evaluation_id"]).update(status=Evaluation.STATUS_FAILED)
    again = submit(client)
    assert again.status_code == 201
    assert again.json()["id"] == first["id"] and again.json()["status"] == "queued"


def test_a_new_problem_version_is_evaluated_again(problem, alice, api, tmp_path):
    from apps.submissions.problems import problem_load_from_file
    from tests.site.conftest import PROBLEM_FILE

    client = api(alice.token)
    first = submit(client).json()
    changed = tmp_path / PROBLEM_FILE.name
    changed.write_text(PROBLEM_FILE.read_text().replace("4096", "8192"))
    problem_load_from_file(path=changed, hardware=["cpu"])
    again = submit(client)
    assert again.status_code == 201
    assert again.json()["id"] != first["id"] and again.json()["problem_version"] == 2
    assert Submission.objects.count() == 2
