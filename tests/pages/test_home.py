"""The home page opens on the race: who leads each pool, the best agent, LLM and person against torch.compile,
the newest verified results, the problems one click away; a pool with no runner online says its submissions
wait."""

import pytest

from tests.leaderboard.builders import make_entrant, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def race(cpu_pool, gpu_pool):
    p1 = make_problem("softmax-rows", pools=(gpu_pool,))
    p2 = make_problem("gelu-erf", pools=(gpu_pool,))
    agent, llm = make_entrant("Kernel Agent", "agent"), make_entrant("Frontier LLM", "llm")
    result(agent, p1, gpu_pool, runtime_us=25, eager_us=100, compile_us=50)   # 4x eager
    result(agent, p2, gpu_pool, runtime_us=80, eager_us=100, compile_us=90)   # 1.25x
    result(llm, p1, gpu_pool, runtime_us=200, eager_us=100, compile_us=50)    # 0.5x
    return gpu_pool


def test_it_opens_on_who_leads_each_pool(client, race):
    html = client.get("/").content.decode()
    card = html[html.index('data-pool="h200"'):]
    card = card[: card.index("</article>")]
    assert "Leading: " in card and "<strong>Kernel Agent</strong>" in card
    assert '<tr data-kind="agent">' in card and '<tr data-kind="llm">' in card
    assert '<tr data-kind="torch-compile">' in card
    agent_row = card[card.index('<tr data-kind="agent">'):]
    assert "100%" in agent_row[: agent_row.index("</tr>")]  # both problems faster than eager
    assert "Over 2 problems; torch.compile over those where it was measured (2)" in card


def test_it_lists_the_newest_verified_results(client, race):
    html = client.get("/").content.decode()
    newest = html[html.index('id="newest"'):]
    assert newest.index("Frontier LLM") < newest.index("Kernel Agent")  # newest first
    assert "0.50×" in newest and "4.00×" in newest


def test_it_says_when_a_pool_has_no_runner_online(client, race, problem):
    html = client.get("/").content.decode()
    card = html[html.index('data-pool="h200"'):]
    assert "No runner online for this pool: submissions to it wait" in card[: card.index("</article>")]
    listing = client.get("/problems/").content.decode()
    assert 'data-idle-pool="h200"' in listing and "Softmax Rows" in listing
