"""A per-entrant rate limit: 429 with Retry-After, and other entrants are not affected."""

from tests.site.conftest import error_of, submit


def test_it_answers_429_with_retry_after_past_the_limit(problem, alice, bob, api, settings):
    settings.SUBMISSIONS_PER_HOUR = 2
    client = api(alice.token)
    assert submit(client, source="# one\n" + "x = 1\n").status_code == 201
    assert submit(client, source="# two\n" + "x = 2\n").status_code == 201
    response = submit(client, source="# three\n" + "x = 3\n")
    assert response.status_code == 429
    retry_after = int(response.headers["Retry-After"])
    assert 3500 <= retry_after <= 3601
    assert error_of(response)["code"] == "rate_limited"
    # Bob has his own budget.
    assert submit(api(bob.token), source="# bob\n").status_code == 201


def test_a_rerun_counts_against_the_limit(problem, alice, api, settings):
    settings.SUBMISSIONS_PER_HOUR = 1
    client = api(alice.token)
    assert submit(client, language="cpp").status_code == 201
    assert submit(client, language="cpp", rerun=True).status_code == 429


def test_a_duplicate_costs_nothing(problem, alice, api, settings):
    settings.SUBMISSIONS_PER_HOUR = 1
    client = api(alice.token)
    assert submit(client).status_code == 201
    assert submit(client).status_code == 200


def test_retry_after_is_when_the_limit_th_newest_evaluation_leaves_the_hour(problem, alice, api, settings):
    from datetime import timedelta

    from django.utils import timezone

    from apps.submissions.models import Evaluation

    settings.SUBMISSIONS_PER_HOUR = 3
    client = api(alice.token)
    ids = [submit(client, source=f"# {n}\nx = {n}\n").json()["evaluation_id"] for n in range(3)]
    now = timezone.now()
    for pk, minutes in zip(ids, (50, 20, 10), strict=True):
        Evaluation.objects.filter(pk=pk).update(queued_at=now - timedelta(minutes=minutes))
    # 3 in the hour, limit 2: a slot frees when the 2nd newest (20 minutes old) leaves, in 40 minutes; not when
    # the oldest does (10 minutes).
    settings.SUBMISSIONS_PER_HOUR = 2
    response = submit(client, source="# late\n")
    assert response.status_code == 429
    assert 40 * 60 - 10 <= int(response.headers["Retry-After"]) <= 40 * 60 + 1
    # Older than an hour no longer counts: one left in the window.
    Evaluation.objects.filter(pk__in=ids[:2]).update(queued_at=now - timedelta(minutes=61))
    assert submit(client, source="# late\n").status_code == 201
