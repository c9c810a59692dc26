"""The ANE board of an `m4-ane` pool: an honest empty state until a Mac reports, then the columns of the results
that Mac runners posted through the runner API (claim, stages, result). alice's job is one the site really
prepared and sent to the pool's queue; the others are dispatched by hand to keep the test short.

alice's agent and bob's LLM are accepted (alice faster); charlie's is a wrong answer and stays off the board.
The result objects: tests/leaderboard/ane_results.py.
"""
# ruff: noqa: F811

import re

import pytest

from apps.submissions.tasks import prepare_ane_job
from tests.ane.site import (  # noqa: F401
    POOL,
    POOL_QUEUE,
    PREPARE_QUEUE,
    alice,
    ane_pool,
    ane_problem,
    api,
    broker_queue,
    mac_runner,
    submit,
)
from tests.leaderboard.ane_results import BUILDER, accepted, actor, mac_reports, queued_job

URL = f"/leaderboard/{POOL}/"


def _prepared_job(client, broker_queue, capture) -> dict:
    """Submit, run the site's preparation task on the message dispatch sent, return the Mac's job."""
    with capture(execute=True):
        response = submit(client, BUILDER)
    assert response.status_code == 201, response.json()
    evaluation_id = response.json()["evaluation_id"]
    [site_job] = [m["kwargs"]["job"] for m in broker_queue(PREPARE_QUEUE) if m["kwargs"]["job"]["evaluation_id"]
                  == evaluation_id]
    assert prepare_ane_job(site_job) == "sent"
    [job] = [m["kwargs"]["job"] for m in broker_queue(POOL_QUEUE) if m["kwargs"]["job"]["evaluation_id"]
             == evaluation_id]
    return job


def _cells(html: str, table_id: str) -> dict[str, dict[str, str]]:
    """{entrant slug: {data-field: cell text}} of one table of the page."""
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, re.S)
    assert table, f"no table {table_id}"
    rows = {}
    for slug, body in re.findall(r'<tr data-entrant="([^"]+)">(.*?)</tr>', table.group(0), re.S):
        rows[slug] = {field: " ".join(re.sub(r"<[^>]+>", " ", text).split())
                      for field, text in re.findall(r'data-field="([^"]+)">(.*?)</td>', body, re.S)}
    return rows


def test_it_shows_an_honest_empty_state_before_anymac_reports(ane_problem, client):
    html = client.get(URL).content.decode()
    assert 'id="ane-empty"' in html and "No Mac runner serves this pool yet" in html
    assert 'id="ane-board"' not in html
    assert "No accepted result from a Mac yet." in html


def test_with_a_runner_but_no_result_it_says_so(ane_problem, mac_runner, client):
    html = client.get(URL).content.decode()
    assert "This pool has 1 runner, but none has reported an accepted result" in html


def test_it_ranks_the_results_mac_runners_posted(ane_problem, mac_runner, alice, api, broker_queue, client,
                                                 django_capture_on_commit_callbacks):
    _runner, secret = mac_runner
    bob, bob_token = actor("Bob", "llm")
    _charlie, charlie_token = actor("Charlie", "human")
    capture = django_capture_on_commit_callbacks
    alice_job = _prepared_job(api(alice.token), broker_queue, capture)
    flops = alice_job["ane"]["flops"]  # the problem's work, counted by the site when it prepared the job
    mac_reports(api, secret, alice_job, accepted(flops, runtime_us=200.0, coreml_us=500.0,
                                                   coreml_cpu_us=4000.0, op_share=1.0, cost_share=0.9))
    mac_reports(api, secret, queued_job(api(bob_token)), accepted(
        flops, runtime_us=400.0, coreml_us=500.0, coreml_cpu_us=4000.0, op_share=0.5, cost_share=0.25))
    wrong = {"verdict": "wrong_answer", "correct": False, "runtime_us": None, "message": "input set 1: mismatch",
             "placement": {"ane_op_share": 1.0, "ane_cost_share": 1.0}}
    mac_reports(api, secret, queued_job(api(charlie_token)), wrong)

    html = client.get(URL).content.decode()
    assert 'id="ane-empty"' not in html
    board = _cells(html, "ane-board")
    assert list(board) == [alice.entrant.slug, bob.slug]  # best first; charlie's wrong answer is not there
    assert board[alice.entrant.slug]["geomean_speedup_vs_coreml"] == "2.50× (1)"
    assert board[bob.slug]["geomean_speedup_vs_coreml"] == "1.25× (1)"
    assert board[alice.entrant.slug]["solved"] == "1 / 1"
    assert board[alice.entrant.slug]["mean_ane_cost_share"] == "90.0%"

    problem = re.search(r'<section class="card" id="ane-problem-pointwise-conv-relu-ane">.*?</section>', html, re.S)
    entries = _cells(problem.group(0).replace("<table", '<table id="entries"', 1), "entries")
    assert list(entries) == [alice.entrant.slug, bob.slug]
    alice_row = entries[alice.entrant.slug]
    assert alice_row["runtime_us"] == "200 µs" and alice_row["coreml_us"] == "500 µs"
    assert alice_row["speedup_vs_coreml"] == "2.50×" and alice_row["speedup_vs_coreml_cpu"] == "20.00×"
    assert alice_row["tflops"] == f"{flops / 200e-6 / 1e12:.3f}"
    assert alice_row["ane_op_share"] == "100.0%" and alice_row["ane_cost_share"] == "90.0%"
    assert alice_row["tflops_per_watt"] == "–"  # no powermetrics: not measured, not shown
    assert entries[bob.slug]["ane_op_share"] == "50.0%"

    # The same reading through the API, for agents.
    body = api().get(f"/api/v1/leaderboard/ane/?hardware={POOL}").json()
    assert body["problems"] == 1
    assert [(r["entrant_slug"], r["rank"], r["geomean_speedup_vs_coreml"]) for r in body["rows"]] == [
        (alice.entrant.slug, 1, 2.5), (bob.slug, 2, 1.25)]
    api_alice = body["entries"][0]
    assert (api_alice["entrant_slug"], api_alice["runtime_us"], api_alice["coreml_us"]) == (alice.entrant.slug, 200.0, 500.0)
    assert api_alice["tflops"] == pytest.approx(flops / 200e-6 / 1e12) and api_alice["tflops_per_watt"] is None


def test_the_ane_api_explains_a_wrong_or_missing_pool(ane_problem, api):
    from apps.devices.services import pool_get_or_create

    pool_get_or_create(slug="cpu")
    missing = api().get("/api/v1/leaderboard/ane/")
    assert missing.status_code == 400 and "hardware=m4-ane" in str(missing.json()["error"])
    not_ane = api().get("/api/v1/leaderboard/ane/?hardware=cpu")
    assert not_ane.status_code == 404 and "not an ANE pool" in not_ane.json()["error"]["message"]
    empty = api().get(f"/api/v1/leaderboard/ane/?hardware={POOL}").json()
    assert empty == {"board": "ane", "hardware": POOL, "problems": 1, "rows": [], "entries": []}


def test_values_a_runner_did_not_measure_properly_show_as_dashes(ane_problem, mac_runner, alice, api, client):
    _runner, secret = mac_runner
    job = queued_job(api(alice.token))
    result = accepted(10**9, runtime_us=200.0, coreml_us=500.0, coreml_cpu_us=4000.0, op_share=1.0, cost_share=0.9)
    # Not a number, not positive, a share above 1: each is shown as unmeasured, never as given.
    result |= {"tflops": "fast", "coreml_us": -1.0, "placement": {"ane_op_share": 1.7, "ane_cost_share": None}}
    mac_reports(api, secret, job, result)
    html = client.get(URL).content.decode()
    problem = re.search(r'<section class="card" id="ane-problem-pointwise-conv-relu-ane">.*?</section>', html, re.S)
    row = _cells(problem.group(0).replace("<table", '<table id="entries"', 1), "entries")[alice.entrant.slug]
    assert row["tflops"] == row["coreml_us"] == row["ane_op_share"] == row["ane_cost_share"] == "–"
    assert row["speedup_vs_coreml"] == "2.50×" and row["runtime_us"] == "200 µs"
