"""GET /api/v1/problems/ and /api/v1/problems/{slug}/."""

from tests.site.conftest import error_of


def test_it_lists_problems_with_their_pools(problem, api):
    rows = api().get("/api/v1/problems/").json()
    assert rows == [{"slug": "add-one-cpu", "title": "Add one", "level": 1, "hardware": ["cpu"], "version": 1,
                     "content_hash": problem.content_hash, "url": "/api/v1/problems/add-one-cpu/"}]


def test_it_filters_by_pool_and_level(problem, api):
    assert api().get("/api/v1/problems/?hardware=h200").json() == []
    assert api().get("/api/v1/problems/?level=2").json() == []
    assert len(api().get("/api/v1/problems/?hardware=cpu&level=1").json()) == 1


def test_a_bad_level_is_a_400(problem, api):
    response = api().get("/api/v1/problems/?level=abc")
    assert response.status_code == 400
    assert "level" in error_of(response)["fields"]


def test_the_detail_has_the_reference_and_a_starter_template(problem, api):
    body = api().get("/api/v1/problems/add-one-cpu/").json()
    assert body["reference_source"] == problem.source
    assert body["description"] == "Adds one to every element."
    assert body["starter_language"] == "cpp"
    assert "class ModelNew" in body["starter_template"] and "load_inline" in body["starter_template"]
    compile(body["starter_template"], "starter.py", "exec")


def test_an_unknown_problem_is_a_404(db, api):
    response = api().get("/api/v1/problems/nope/")
    assert response.status_code == 404
    assert "problems" in error_of(response)["message"]
