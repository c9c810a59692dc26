"""Every 4xx of the API has one shape: {"error": {"code", "message", "fields"}}."""

from tests.site.conftest import error_of


def test_an_unknown_api_path_is_a_404(db, api):
    response = api().get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert "/api/docs/" in error_of(response)["message"]


def test_a_wrong_method_is_a_405(db, api):
    response = api().delete("/api/v1/problems/")
    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


def test_a_body_of_an_unsupported_type_is_a_415(problem, alice, api):
    response = api(alice.token).post("/api/v1/submissions/", data="problem=add-one-cpu",
                                     content_type="text/plain")
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"
