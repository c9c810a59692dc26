"""GET /api/v1/leaderboard/?hardware=<chip>-ane answers with the ANE board (the JSON of /api/v1/leaderboard/ane/),
not with GPU columns of nulls; level and p, which the ANE board has no use for, get a 400 naming them.

alice's agent and bob's LLM each have an accepted result that the Mac runner mac-1 posted through the runner API.
"""
# ruff: noqa: F811

import pytest

from tests.ane.site import POOL, alice, ane_pool, ane_problem, api, mac_runner  # noqa: F401
from tests.leaderboard.ane_results import accepted, actor, mac_reports, queued_job

FLOPS = 10**9


@pytest.fixture
def reported(ane_problem, mac_runner, alice, api):
    _runner, secret = mac_runner
    bob, bob_token = actor("Bob", "llm")
    mac_reports(api, secret, queued_job(api(alice.token)), accepted(
        FLOPS, runtime_us=250.0, coreml_us=500.0, coreml_cpu_us=3000.0, op_share=1.0, cost_share=0.8))
    mac_reports(api, secret, queued_job(api(bob_token)), accepted(
        FLOPS, runtime_us=1000.0, coreml_us=500.0, coreml_cpu_us=3000.0, op_share=0.5, cost_share=0.5))
    return alice.entrant, bob


def test_it_answers_an_ane_pool_with_the_ane_board(reported, api):
    alice_entrant, bob = reported
    generic = api().get(f"/api/v1/leaderboard/?hardware={POOL}")
    assert generic.status_code == 200, generic.json()
    body = generic.json()
    assert body == api().get(f"/api/v1/leaderboard/ane/?hardware={POOL}").json()
    assert (body["board"], body["hardware"], body["problems"]) == ("ane", POOL, 1)
    assert [(r["entrant_slug"], r["rank"], r["geomean_speedup_vs_coreml"]) for r in body["rows"]] == [
        (alice_entrant.slug, 1, 2.0), (bob.slug, 2, 0.5)]
    assert body["rows"][0]["mean_tflops"] == pytest.approx(FLOPS / 250e-6 / 1e12)
    assert body["rows"][0]["mean_ane_cost_share"] == 0.8
    # No GPU column, and no PyTorch baseline rows: they mean nothing on the Neural Engine.
    assert not {"fast_0", "fast_1_vs_eager", "geomean_speedup_vs_eager"} & set(body["rows"][0])
    assert {r["kind"] for r in body["rows"]} == {"agent", "llm"}


def test_it_still_answers_a_gpu_pool_with_the_kernelbench_board(reported, api):
    from apps.devices.services import pool_get_or_create

    pool_get_or_create(slug="h200")
    body = api().get("/api/v1/leaderboard/?hardware=h200").json()
    assert (body["board"], body["hardware"], body["geomean_over"]) == ("kernelbench", "h200", "solved")
    assert "fast_0" in body["rows"][0]


@pytest.mark.parametrize("query, fields", [("level=1", ["level"]), ("p=1.5", ["p"]),
                                           ("level=2&p=0", ["level", "p"])])
def test_it_refuses_level_and_p_on_an_ane_pool_naming_them(ane_problem, api, query, fields):
    response = api().get(f"/api/v1/leaderboard/?hardware={POOL}&{query}")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid" and sorted(error["fields"]) == fields
    assert "does not apply to an ANE pool" in error["fields"][fields[0]][0]
    assert f"/api/v1/leaderboard/?hardware={POOL}" in error["fields"][fields[0]][0]


def test_the_openapi_schema_gives_both_answers(ane_problem, api):
    schema = api().get("/api/schema/?format=json").json()
    ok = schema["paths"]["/api/v1/leaderboard/"]["get"]["responses"]["200"]["content"]["application/json"]
    answer = schema["components"]["schemas"][ok["schema"]["$ref"].rsplit("/", 1)[1]]
    assert answer["discriminator"]["propertyName"] == "board"
    assert set(answer["discriminator"]["mapping"]) == {"kernelbench", "ane"}
    ane_shape = schema["components"]["schemas"][answer["discriminator"]["mapping"]["ane"].rsplit("/", 1)[1]]
    assert {"board", "hardware", "problems", "rows", "entries"} == set(ane_shape["properties"])
