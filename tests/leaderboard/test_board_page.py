"""/leaderboard/ and /leaderboard/<pool>/: rows, level tabs, p, figures, and clear answers to bad input."""

import json

import pytest
from django.test import Client

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    pool = make_pool("h200")
    p1 = make_problem("p1", level=1, pools=(pool,))
    make_problem("p2", level=2, pools=(pool,))
    result(make_entrant("CUDA Agent", "agent"), p1, pool, runtime_us=40, eager_us=100, compile_us=80)
    return Client()


def test_it_sends_the_home_page_to_the_default_pool(client, settings):
    settings.DEFAULT_HARDWARE_POOL = "h200"
    assert client.get("/leaderboard/")["Location"] == "/leaderboard/h200/"


def test_it_says_so_when_there_is_no_pool(db):
    page = Client().get("/leaderboard/")
    assert page.status_code == 200
    assert b"No hardware pool is set up yet" in page.content


def test_it_renders_the_ranked_rows_with_badges_and_baselines(client):
    page = client.get("/leaderboard/h200/")
    html = page.content.decode()
    assert page.status_code == 200
    assert html.index('data-entrant="cuda-agent"') < html.index('data-entrant="torch-compile"')
    assert 'class="badge kind-agent"' in html and 'class="badge kind-baseline"' in html
    assert "2.50×" in html  # 100 / 40
    assert "over solved problems only" in html
    assert 'data-ws="/ws/leaderboard/h200/"' in html
    assert "/static/vendor/plotly/plotly.min.js" in html


def test_it_embeds_the_plotly_figures_as_json(client):
    html = client.get("/leaderboard/h200/").content.decode()
    start = html.index('<script id="fig-fastp-eager" type="application/json">') + len(
        '<script id="fig-fastp-eager" type="application/json">')
    figure = json.loads(html[start:html.index("</script>", start)])
    names = {trace["name"] for trace in figure["data"]}
    assert names == {"CUDA Agent", "PyTorch eager", "torch.compile"}
    agent = next(t for t in figure["data"] if t["name"] == "CUDA Agent")
    # 50% of the suite (1 of 2 problems) up to p just below 2.5, then 0.
    assert agent["y"][0] == 50 and agent["y"][-1] == 0


def test_it_shows_one_level_and_the_fast_p_columns(client):
    html = client.get("/leaderboard/h200/?level=2&p=1.5").content.decode()
    assert "all 1 problem</strong>" in html
    assert 'data-entrant="cuda-agent"' not in html  # nothing attempted at level 2
    assert "fast_1.5 vs eager" in html
    assert 'data-api="/api/v1/leaderboard/?hardware=h200&amp;level=2&amp;p=1.5"' in html


@pytest.mark.parametrize("query, message", [
    ("level=x", "Level &#x27;x&#x27; is not a level"), ("p=-2", "p must be between 0 and 1000"),
    ("p=abc", "p &#x27;abc&#x27; is not a number"),
])
def test_it_explains_a_bad_parameter(client, query, message):
    page = client.get(f"/leaderboard/h200/?{query}", follow=True)
    assert page.redirect_chain[-1][0] == "/leaderboard/h200/"
    assert message in page.content.decode()


def test_it_answers_404_for_an_unknown_pool(client):
    assert client.get("/leaderboard/tpu/").status_code == 404
