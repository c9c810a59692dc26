"""/api/schema/ documents every endpoint of the API; /api/docs/ serves Swagger UI."""

import yaml


def test_the_schema_lists_every_endpoint(db, api):
    response = api().get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = schema["paths"]
    for path, method in [("/api/v1/submissions/", "post"), ("/api/v1/submissions/", "get"),
                         ("/api/v1/submissions/{submission_id}/", "get"), ("/api/v1/problems/", "get"),
                         ("/api/v1/problems/{slug}/", "get"), ("/api/v1/jobs/{evaluation_id}/claim/", "post"),
                         ("/api/v1/jobs/{evaluation_id}/stage/", "post"),
                         ("/api/v1/jobs/{evaluation_id}/result/", "post"),
                         ("/api/v1/jobs/{evaluation_id}/fail/", "post"), ("/api/v1/runners/me/", "get"),
                         ("/api/v1/runners/heartbeat/", "post")]:
        assert method in paths[path], (path, method)
    create = paths["/api/v1/submissions/"]["post"]
    assert {"201", "400", "401", "403", "429"} <= set(create["responses"])
    assert {"EntrantToken", "RunnerSecret"} <= set(schema["components"]["securitySchemes"])


def test_swagger_ui_is_served(db, api):
    assert api().get("/api/docs/").status_code == 200
