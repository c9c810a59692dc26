"""/leaderboard/reported/: the published table with its notes, beside our numbers, never invented."""

import pytest
from django.test import Client

from .builders import make_entrant, make_pool, make_problem, result

pytestmark = pytest.mark.django_db


def test_it_shows_the_source_and_the_discrepancy_note_and_says_nothing_is_measured(db):
    make_pool("h200")
    html = Client().get("/leaderboard/reported/").content.decode()
    assert "arXiv 2602.24286v1" in html
    assert "Table 1 says 97 / 100 / 90" in html
    assert "None of these entrants has been measured on H200 yet" in html
    assert "98.8%" in html  # CUDA Agent, overall pass rate, reported
    assert html.count("not measured on H200") == 24  # 6 entrants x 4 subsets


def test_it_puts_our_measurement_beside_the_reported_one(db):
    pool = make_pool("h200")
    p1 = make_problem("p1", level=1, pools=(pool,))
    make_problem("p2", level=1, pools=(pool,))
    result(make_entrant("CUDA Agent", "agent"), p1, pool, runtime_us=50, eager_us=100, compile_us=100)
    html = Client().get("/leaderboard/reported/?hardware=h200").content.decode()
    assert "None of these entrants has been measured" not in html
    # Measured overall and at level 1; nothing at levels 2 and 3, where it stays "not measured".
    assert html.count("not measured on H200") == 24 - 2
    overall = html[html.index('data-subset="overall"'):html.index('data-subset="level1"')]
    cuda = overall[overall.index("CUDA Agent"):]
    assert "98.8%" in cuda and "50.0%" in cuda and "2.00×" in cuda


def test_it_answers_404_for_an_unknown_pool(db):
    assert Client().get("/leaderboard/reported/?hardware=tpu").status_code == 404
