"""GET /api/v1/leaderboard/: the row shape, p, levels, and clear errors."""

import pytest
from django.test import Client

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    pool = make_pool("h200")
    p1 = make_problem("p1", level=1, pools=(pool,))
    make_problem("p2", level=2, pools=(pool,))
    result(make_entrant("Claude Opus 4.5", "llm"), p1, pool, runtime_us=25, eager_us=100, compile_us=50)
    return Client()


def test_it_returns_the_ranked_rows_with_the_documented_fields(client):
    body = client.get("/api/v1/leaderboard/?hardware=h200").json()
    assert (body["board"], body["hardware"], body["level"], body["problems"], body["geomean_over"]) == (
        "kernelbench", "h200", None, 2, "solved")
    rows = body["rows"]
    assert [r["entrant"] for r in rows] == ["Claude Opus 4.5", "torch.compile", "PyTorch eager"]
    top = rows[0]
    for key in ("entrant", "kind", "fast_0", "fast_1_vs_eager", "fast_1_vs_compile", "geomean_speedup_vs_eager",
                "geomean_speedup_vs_compile", "solved", "attempted"):
        assert key in top
    assert (top["kind"], top["solved"], top["attempted"], top["rank"]) == ("llm", 1, 1, 1)
    assert top["fast_0"] == 0.5 and top["fast_1_vs_compile"] == 0.5
    assert top["geomean_speedup_vs_eager"] == pytest.approx(4.0)
    assert "fast_p_vs_eager" not in top  # only when p is asked for


def test_it_adds_fast_p_fields_when_p_is_given(client):
    rows = client.get("/api/v1/leaderboard/?hardware=h200&p=2.5").json()["rows"]
    top = rows[0]
    assert (top["p"], top["fast_p_vs_eager"], top["fast_p_vs_compile"]) == (2.5, 0.5, 0.0)


def test_it_filters_by_level(client):
    body = client.get("/api/v1/leaderboard/?hardware=h200&level=2").json()
    assert body["problems"] == 1
    assert [r["entrant_slug"] for r in body["rows"]] == ["pytorch-eager", "torch-compile"]


def test_it_defaults_to_the_sites_default_pool(client, settings):
    settings.DEFAULT_HARDWARE_POOL = "h200"
    assert client.get("/api/v1/leaderboard/").json()["hardware"] == "h200"


def test_it_answers_404_naming_the_known_pools_for_an_unknown_pool(client):
    response = client.get("/api/v1/leaderboard/?hardware=tpu")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Unknown hardware pool 'tpu'. Known pools: h200."


@pytest.mark.parametrize("query, field", [
    ("level=two", "level"), ("level=0", "level"), ("p=fast", "p"), ("p=-1", "p"), ("p=nan", "p"), ("p=inf", "p"),
    ("hardware=no%20spaces", "hardware"),
])
def test_it_answers_400_for_bad_parameters(client, query, field):
    response = client.get(f"/api/v1/leaderboard/?{query}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert list(error["fields"]) == [field]


def test_it_is_described_in_the_openapi_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    assert "/api/v1/leaderboard/" in schema["paths"]
    assert "/api/v1/problems/{slug}/leaderboard/" in schema["paths"]
