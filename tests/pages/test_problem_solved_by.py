"""The problem page's "Solved by": entrants in good standing with an accepted, unmoderated submission."""

import re

import pytest

from tests.pages.fixtures import SOLUTION


def _solved_by(client) -> int:
    html = client.get("/problems/relu-scale/").content.decode()
    match = re.search(r"<th>Solved by</th><td>(\d+) entrant", html)
    assert match, "no Solved by row on the problem page"
    return int(match.group(1))


def _submit(entrant, source: str, verdict: str):
    from apps.submissions import services
    from apps.submissions.models import Evaluation

    submission, evaluation, _ = services.submission_create(entrant=entrant, problem_slug="relu-scale",
                                                           source=source, language="cpp", hardware="cpu")
    Evaluation.objects.filter(pk=evaluation.pk).update(status="done", stage="done", verdict=verdict)
    return submission


@pytest.mark.django_db
def test_it_counts_each_entrant_once_and_leaves_out_failed_moderated_and_banned(client, problem, alice_agent, bob,
                                                                                 sam):
    from apps.submissions import services

    bob_agent, _ = services.entrant_create(name="bob-agent", kind="llm", owner=bob)
    sam_agent, _ = services.entrant_create(name="sam-agent", kind="human", owner=sam)
    assert _solved_by(client) == 0

    _submit(alice_agent, SOLUTION, "wrong_answer")
    assert _solved_by(client) == 0
    _submit(alice_agent, SOLUTION + "# 2\n", "accepted")
    _submit(alice_agent, SOLUTION + "# 3\n", "accepted")
    assert _solved_by(client) == 1  # two accepted submissions, one entrant

    hacked = _submit(bob_agent, SOLUTION, "accepted")
    assert _solved_by(client) == 2
    hacked.moderation = "hacked"
    hacked.save()
    assert _solved_by(client) == 1

    _submit(sam_agent, SOLUTION, "accepted")
    assert _solved_by(client) == 2
    sam_agent.is_banned = True
    sam_agent.save()
    assert _solved_by(client) == 1


@pytest.mark.django_db
def test_its_queries_do_not_grow_with_the_submissions(client, problem, alice_agent, django_assert_max_num_queries):
    for i in range(3):
        _submit(alice_agent, SOLUTION + f"# {i}\n", "accepted")
    with django_assert_max_num_queries(3):  # the problem, its pools, the count
        assert client.get("/problems/relu-scale/").status_code == 200
    for i in range(3, 30):
        _submit(alice_agent, SOLUTION + f"# {i}\n", "accepted")
    with django_assert_max_num_queries(3):
        assert client.get("/problems/relu-scale/").status_code == 200


def _listed_solved_by(client, query: str = "") -> int:
    html = client.get(f"/problems/{query}").content.decode()
    row = html[html.index('data-problem="relu-scale"'):]
    match = re.search(r'(\d+) <span class="muted small">entrant', row[: row.index("</tr>")])
    assert match, "no solved count in the problem's row"
    return int(match.group(1))


@pytest.mark.django_db
def test_the_list_counts_like_the_page_and_per_track(client, problem, gpu_pool, alice_agent, bob):
    from apps.submissions import services
    from apps.submissions.models import Evaluation

    problem.pools.add(gpu_pool)
    bob_agent, _ = services.entrant_create(name="bob-agent", kind="llm", owner=bob)
    _submit(alice_agent, SOLUTION, "accepted")  # on cpu
    _submit(alice_agent, SOLUTION + "# 2\n", "accepted")
    _, gpu_eval, _ = services.submission_create(entrant=bob_agent, problem_slug="relu-scale", source=SOLUTION,
                                                language="cuda", hardware="h200")
    Evaluation.objects.filter(pk=gpu_eval.pk).update(status="done", verdict="accepted")
    assert _listed_solved_by(client) == _solved_by(client) == 2
    assert _listed_solved_by(client, "?pool=cpu") == 1
    assert _listed_solved_by(client, "?pool=h200") == 1
    bob_agent.is_banned = True
    bob_agent.save()
    assert _listed_solved_by(client) == _solved_by(client) == 1
    assert _listed_solved_by(client, "?pool=h200") == 0
