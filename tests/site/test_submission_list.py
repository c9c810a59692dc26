"""GET /api/v1/submissions/?mine=1: the caller's own submissions, newest first."""

from tests.site.conftest import error_of, submit


def test_it_lists_only_the_callers_submissions(problem, alice, bob, api):
    first = submit(api(alice.token), source="# a1\n").json()["id"]
    second = submit(api(alice.token), source="# a2\n").json()["id"]
    submit(api(bob.token), source="# b1\n")
    rows = api(alice.token).get("/api/v1/submissions/?mine=1").json()
    assert [row["id"] for row in rows] == [second, first]
    assert all(row["entrant"] == alice.entrant.slug for row in rows)


def test_it_needs_a_token(db, api):
    response = api().get("/api/v1/submissions/?mine=1")
    assert response.status_code == 401
    error_of(response)


def test_it_validates_the_limit(problem, alice, api):
    response = api(alice.token).get("/api/v1/submissions/?limit=0")
    assert response.status_code == 400
    assert "limit" in error_of(response)["fields"]
