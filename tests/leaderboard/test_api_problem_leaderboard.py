"""GET /api/v1/problems/{slug}/leaderboard/: ranked entries with the baselines placed among them."""

import pytest
from django.test import Client

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    pool = make_pool("h200")
    p1 = make_problem("relu", pools=(pool,))
    make_problem("cpu-only", pools=(make_pool("cpu"),))
    ann = make_entrant("Ann", "human")
    result(ann, p1, pool, runtime_us=90, eager_us=100, compile_us=80)
    result(ann, p1, pool, runtime_us=60, eager_us=100, compile_us=80)
    result(make_entrant("CUDA Agent", "agent"), p1, pool, runtime_us=30, eager_us=100, compile_us=80)
    return Client()


def test_it_ranks_the_best_entry_per_entrant_by_runtime(client):
    body = client.get("/api/v1/problems/relu/leaderboard/?hardware=h200").json()
    assert (body["problem"], body["hardware"]) == ("relu", "h200")
    entries = [(e["entrant"], e["rank"], e["runtime_us"]) for e in body["entries"]]
    assert entries == [("CUDA Agent", 1, 30), ("Ann", 2, 60), ("torch.compile", None, 80), ("PyTorch eager", None, 100)]
    agent = body["entries"][0]
    assert agent["speedup_vs_eager"] == pytest.approx(100 / 30)
    assert agent["speedup_vs_compile"] == pytest.approx(80 / 30)
    assert agent["submission_id"] and agent["finished_at"]


def test_it_answers_404_for_a_problem_not_on_the_pool(client):
    response = client.get("/api/v1/problems/cpu-only/leaderboard/?hardware=h200")
    assert response.status_code == 404
    assert "No active problem 'cpu-only' on hardware pool 'h200'" in response.json()["error"]["message"]
    assert client.get("/api/v1/problems/relu/leaderboard/?hardware=x9").status_code == 404
