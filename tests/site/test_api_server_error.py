"""A failure inside an API view (a bug) answers 500 in the API's error shape, logged, without the debug page."""

import logging

from tests.site.conftest import error_of


def test_it_answers_a_500_in_the_error_shape_and_logs_it(db, api, settings, monkeypatch, caplog):
    from apps.submissions import api as api_module

    settings.DEBUG = True

    def broken(**kwargs):  # a fault injected where the view reads: any bug of a view takes this path
        raise RuntimeError("failure at /srv/kernelhub/secret_path.py")

    monkeypatch.setattr(api_module.selectors, "problem_list", broken)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = api().get("/api/v1/problems/")
    assert response.status_code == 500
    error = error_of(response)
    assert error["code"] == "server_error" and "Try again later" in error["message"]
    assert b"secret_path" not in response.content and b"Traceback" not in response.content
    assert any("secret_path" in (r.exc_text or "") or (r.exc_info and "secret_path" in str(r.exc_info[1]))
               for r in caplog.records), "the failure was not logged with its traceback"


def test_the_500_handler_answers_api_paths_in_the_error_shape(rf):
    from apps.submissions.api_errors import server_error

    response = server_error(rf.get("/api/v1/problems/"))
    assert response.status_code == 500
    assert b'"code": "server_error"' in response.content
    page = server_error(rf.get("/problems/"))
    assert page.status_code == 500 and b'"code"' not in page.content
