"""A submission's source is private to its entrant's owner (and staff) until the entrant publishes its sources
or the problem's reveal date passes; so are the logs and compiler messages that can quote it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.submissions.models import Evaluation

MARKER = "alice-private-kernel-trick"
COMPILER_ERROR = "error: 'alice_secret_helper' was not declared in this scope"


def _compile_error(submission):
    Evaluation.objects.filter(submission=submission).update(
        status="done", stage="done", verdict="compile_error", correct=False, message=COMPILER_ERROR,
        log="g++ ... alice_secret_helper(x) ...", result={"verdict": "compile_error", "compile_log": "g++ log"},
    )


def _page(client, submission):
    r = client.get(f"/submissions/{submission.pk}/")
    assert r.status_code == 200
    return r.content.decode()


@pytest.mark.django_db
def test_it_shows_the_source_to_its_owner(client, alice, alice_submission):
    client.force_login(alice)
    html = _page(client, alice_submission)
    assert MARKER in html
    assert 'id="source-private"' not in html


@pytest.mark.django_db
def test_it_hides_the_source_from_another_user_and_anonymous(client, bob, alice_submission):
    client.force_login(bob)
    html = _page(client, alice_submission)
    assert MARKER not in html
    assert 'id="source-private"' in html
    client.logout()
    html = _page(client, alice_submission)
    assert MARKER not in html
    # nor through the live partial
    assert MARKER not in client.get(f"/submissions/{alice_submission.pk}/?partial=evaluation").content.decode()


@pytest.mark.django_db
def test_it_shows_the_source_to_staff(client, sam, alice_submission):
    client.force_login(sam)
    assert MARKER in _page(client, alice_submission)


@pytest.mark.django_db
def test_it_shows_the_source_once_the_entrant_publishes(client, bob, alice_agent, alice_submission):
    alice_agent.sources_public = True
    alice_agent.save()
    client.force_login(bob)
    assert MARKER in _page(client, alice_submission)


@pytest.mark.django_db
def test_it_shows_the_source_after_the_reveal_date_only(client, problem, alice_submission):
    problem.reveal_at = timezone.now() + timedelta(days=1)
    problem.save()
    html = _page(client, alice_submission)
    assert MARKER not in html
    assert "sources are revealed" in html
    problem.reveal_at = timezone.now() - timedelta(seconds=1)
    problem.save()
    assert MARKER in _page(client, alice_submission)


@pytest.mark.django_db
def test_it_hides_compiler_messages_and_logs_from_others(client, alice, bob, alice_submission):
    _compile_error(alice_submission)
    client.force_login(bob)
    html = _page(client, alice_submission)
    assert "Compile error" in html
    assert "alice_secret_helper" not in html
    assert "g++ log" not in html
    assert "only those who may see the source can read it" in html

    client.force_login(alice)
    html = _page(client, alice_submission)
    assert "alice_secret_helper" in html
    assert "g++ log" in html


@pytest.mark.django_db
def test_it_opens_the_compile_log_for_its_owner(client, alice, alice_submission):
    _compile_error(alice_submission)
    client.force_login(alice)
    assert '<details class="card" id="compile-log" open>' in _page(client, alice_submission)
