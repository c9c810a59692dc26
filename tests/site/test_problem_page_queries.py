"""The problem page reads the problem with its "Solved by" count in one query, and its pools in a second."""

import re

from django.test import Client

from apps.submissions.models import Evaluation
from tests.site.conftest import submit


def _solved_by(html: str) -> int:
    match = re.search(r"<th>Solved by</th><td>(\d+) entrant", html)
    assert match, "no Solved by row on the problem page"
    return int(match.group(1))


def test_it_answers_in_two_queries_with_a_live_count(problem, alice, bob, api, django_assert_num_queries):
    page = Client()
    with django_assert_num_queries(2):
        assert _solved_by(page.get("/problems/add-one-cpu/").content.decode()) == 0
    for actor in (alice, bob):
        body = submit(api(actor.token)).json()
        Evaluation.objects.filter(pk=body["evaluation_id"]).update(status="done", stage="done", verdict="accepted")
    with django_assert_num_queries(2):
        assert _solved_by(page.get("/problems/add-one-cpu/").content.decode()) == 2
