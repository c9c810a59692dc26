"""Evaluation.entrant: a copy of the submission's entrant, which the rate limit reads from its own index."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.submissions.models import Evaluation, Submission
from tests.site.conftest import submit


def test_it_is_the_submissions_entrant_on_a_new_submission_and_on_a_rerun(problem, alice, bob, api):
    first = submit(api(alice.token)).json()
    rerun = submit(api(alice.token), rerun=True).json()
    other = submit(api(bob.token)).json()
    assert rerun["id"] == first["id"] and rerun["evaluation_id"] != first["evaluation_id"]
    for body, actor in ((first, alice), (rerun, alice), (other, bob)):
        assert Evaluation.objects.get(pk=body["evaluation_id"]).entrant_id == actor.entrant.pk


def test_an_evaluation_made_outside_the_services_gets_it_too(problem, alice, api):
    submission = Submission.objects.get(pk=submit(api(alice.token)).json()["id"])
    assert Evaluation.objects.create(submission=submission).entrant_id == alice.entrant.pk


def test_a_rerun_of_an_old_submission_counts_in_the_hour_it_was_asked_for(problem, alice, api, settings):
    settings.SUBMISSIONS_PER_HOUR = 2
    client = api(alice.token)
    body = submit(client).json()
    # The submission and its first evaluation are two hours old: out of the window.
    old = timezone.now() - timedelta(hours=2)
    Submission.objects.filter(pk=body["id"]).update(created_at=old)
    Evaluation.objects.filter(pk=body["evaluation_id"]).update(queued_at=old)
    assert submit(client, rerun=True).status_code == 201
    assert submit(client, source="# another\n").status_code == 201
    assert submit(client, source="# a third\n").status_code == 429


def test_the_rate_limit_does_not_join_the_submissions(problem, alice, api, settings):
    settings.SUBMISSIONS_PER_HOUR = 5
    with CaptureQueriesContext(connection) as queries:
        assert submit(api(alice.token)).status_code == 201
    window_reads = [q["sql"] for q in queries if "queued_at" in q["sql"] and q["sql"].startswith("SELECT")]
    assert len(window_reads) == 1
    assert "entrant_id" in window_reads[0] and "JOIN" not in window_reads[0]
