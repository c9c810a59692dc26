"""The selectors read a board in a fixed number of queries, however many entrants and results (no N+1).
The cache is cleared before each count: these are the queries of a computation, not of a cache hit."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.leaderboard.selectors import baseline_entrants, leaderboard_rows, problem_board

from .builders import make_entrant, make_pool, make_problem, result
from .conftest import clear_leaderboard_cache

pytestmark = pytest.mark.django_db


def queries(fn):
    clear_leaderboard_cache()
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


def grow(pool, problems, first, n_entrants):
    for i in range(first, first + n_entrants):
        entrant = make_entrant(f"E{i}")
        for j, problem in enumerate(problems):
            result(entrant, problem, pool, runtime_us=10 + i + j, eager_us=100, compile_us=90)


def test_it_reads_the_board_in_a_constant_number_of_queries():
    pool = make_pool("h200")
    problems = [make_problem(f"p{i}", pools=(pool,)) for i in range(4)]
    baseline_entrants()
    grow(pool, problems, 0, 2)
    small_rows = queries(lambda: leaderboard_rows(pool="h200"))
    small_problem = queries(lambda: problem_board(slug="p1", pool="h200"))
    grow(pool, problems, 2, 10)
    assert queries(lambda: leaderboard_rows(pool="h200")) == small_rows <= 7
    assert queries(lambda: problem_board(slug="p1", pool="h200")) == small_problem <= 7
    assert len(leaderboard_rows(pool="h200")) == 12 + 2
