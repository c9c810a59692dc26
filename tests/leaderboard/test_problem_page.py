"""/leaderboard/<pool>/problems/<slug>/: ranked entries, code links only where visible, staff moderation form."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def entries():
    pool = make_pool("h200")
    p1 = make_problem("relu", pools=(pool,))
    public = make_entrant("Open Agent", "agent")
    public.sources_public = True
    public.save()
    secret = make_entrant("Closed LLM", "llm")
    return (result(public, p1, pool, runtime_us=30, eager_us=100, compile_us=80),
            result(secret, p1, pool, runtime_us=60, eager_us=100, compile_us=80))


def test_it_ranks_entries_and_links_only_public_code(entries):
    open_eval, closed_eval = entries
    html = Client().get("/leaderboard/h200/problems/relu/").content.decode()
    assert html.index('data-entrant="open-agent"') < html.index('data-entrant="closed-llm"') < html.index(
        'data-entrant="torch-compile"') < html.index('data-entrant="pytorch-eager"')
    assert f'href="/submissions/{open_eval.submission_id}/"' in html
    assert f'href="/submissions/{closed_eval.submission_id}/"' not in html
    assert ">private<" in html
    assert "Moderate" not in html
    assert 'data-figure="fig-runtimes"' in html


def test_it_gives_staff_a_moderation_form_per_entry(entries):
    client = Client()
    client.force_login(get_user_model().objects.create_user("sam", is_staff=True))
    html = client.get("/leaderboard/h200/problems/relu/").content.decode()
    for evaluation in entries:
        assert f'action="/leaderboard/moderate/submissions/{evaluation.submission_id}/"' in html
        assert f'href="/submissions/{evaluation.submission_id}/"' in html  # staff see all code


def test_it_says_so_when_nothing_is_accepted(db):
    pool = make_pool("h200")
    make_problem("empty", pools=(pool,))
    html = Client().get("/leaderboard/h200/problems/empty/").content.decode()
    assert "No accepted entry on H200 yet" in html
    assert "Nothing timed yet on this pool." in html


def test_it_answers_404_for_a_problem_not_on_the_pool(entries):
    make_problem("cpu-only", pools=(make_pool("cpu"),))
    assert Client().get("/leaderboard/h200/problems/cpu-only/").status_code == 404
    assert Client().get("/leaderboard/h200/problems/nope/").status_code == 404
