"""A JSON body nested deeper than 64 levels is a 400 in the API's error shape, never a RecursionError (a body
100,000 deep once answered 500 with the debug page)."""

from tests.site.conftest import error_of


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_it_refuses_a_body_nested_100000_deep_with_a_400(problem, alice, api, settings):
    settings.DEBUG = True  # the debug page is what leaked before
    response = api(alice.token).post("/api/v1/submissions/", data=_nested(100_000), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    error = error_of(response)
    assert error["code"] == "too_deep" and "64" in error["message"] and "flatter" in error["message"]
    assert b"Traceback" not in response.content and b"RecursionError" not in response.content


def test_it_refuses_65_levels_in_an_object(problem, alice, api):
    body = '{"problem": "add-one-cpu", "source": "x", "language": ' + _nested(64) + "}"
    response = api(alice.token).post("/api/v1/submissions/", data=body, content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "too_deep"


def test_it_lets_64_levels_through_to_the_view(problem, alice, api):
    body = '{"problem": "add-one-cpu", "source": "x", "language": ' + _nested(63) + "}"
    response = api(alice.token).post("/api/v1/submissions/", data=body, content_type="application/json")
    # Parsed: the view's own validation answers (language is not a string), not the depth limit.
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid"


def test_a_runners_deep_result_is_refused_too(problem, runners, api):
    response = api(runner=runners["cpu-1"].secret).post("/api/v1/jobs/1/result/", data='{"result": '
                                                        + _nested(5000) + "}", content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "too_deep"
