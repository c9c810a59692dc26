"""/api/schema/ documents every public endpoint of the API (the runners' own endpoints are left out: they
take a runner's secret, docs/RUNNERS.md documents them); /api/docs/ serves Swagger UI with a way back."""

import yaml


def test_the_schema_lists_every_public_endpoint(db, api):
    response = api().get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = schema["paths"]
    for path, method in [("/api/v1/submissions/", "post"), ("/api/v1/submissions/", "get"),
                         ("/api/v1/submissions/{submission_id}/", "get"), ("/api/v1/problems/", "get"),
                         ("/api/v1/problems/{slug}/", "get"), ("/api/v1/leaderboard/", "get")]:
        assert method in paths[path], (path, method)
    create = paths["/api/v1/submissions/"]["post"]
    assert {"201", "400", "401", "403", "429"} <= set(create["responses"])
    assert "EntrantToken" in schema["components"]["securitySchemes"]


def test_it_leaves_the_runners_endpoints_out_of_the_public_schema(db, api):
    schema = yaml.safe_load(api().get("/api/schema/").content)
    runner_paths = [p for p in schema["paths"] if p.startswith(("/api/v1/jobs/", "/api/v1/runners/"))]
    assert runner_paths == []
    assert "RunnerSecret" not in schema["components"].get("securitySchemes", {})
    # They still answer their runners: only the documentation is public-only.
    assert api().post("/api/v1/runners/heartbeat/", {}).status_code == 401


def test_swagger_ui_is_served_with_a_way_back_to_the_site(db, api):
    html = api().get("/api/docs/").content.decode()
    assert '<a class="brand" href="/" id="back-to-site">' in html
    assert 'href="/static/img/favicon.svg"' in html
