"""Bad submissions get a 400 in the one error shape, naming the field, never a 500."""

import json

from apps.submissions.models import Submission
from tests.site.conftest import error_of, submit


def test_it_refuses_an_unknown_problem(problem, alice, api):
    response = submit(api(alice.token), problem="no-such-problem")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "unknown_problem" and "problem" in error["fields"]


def test_it_refuses_an_unknown_pool(problem, alice, api):
    response = submit(api(alice.token), hardware="tpu-v9")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "unknown_pool" and "hardware" in error["fields"]


def test_it_refuses_an_inactive_pool(problem, pools, alice, api):
    pools["cpu"].is_active = False
    pools["cpu"].save()
    response = submit(api(alice.token), hardware="cpu")
    assert response.status_code == 400
    assert "not accepting" in error_of(response)["message"]


def test_it_refuses_a_pool_the_problem_is_not_offered_on(problem, alice, api):
    response = submit(api(alice.token), hardware="h200", language="cuda")
    assert response.status_code == 400
    assert error_of(response)["code"] == "not_offered"


def test_it_refuses_an_empty_source(problem, alice, api):
    response = submit(api(alice.token), source="   \n")
    assert response.status_code == 400
    assert "source" in error_of(response)["fields"]


def test_it_refuses_a_missing_source(problem, alice, api):
    response = api(alice.token).post("/api/v1/submissions/", {"problem": "add-one-cpu"}, format="json")
    assert response.status_code == 400
    assert "source" in error_of(response)["fields"]


def test_it_refuses_an_oversized_source(problem, alice, api, settings):
    settings.MAX_SOURCE_BYTES = 1000
    response = submit(api(alice.token), source="# " + "x" * 1000)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "too_large" and "1000" in error["message"]


def test_it_refuses_malformed_json(problem, alice, api):
    response = api(alice.token).post("/api/v1/submissions/", data='{"problem": "add-one-cpu", ',
                                     content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_request"


def test_it_refuses_json_that_is_not_an_object(problem, alice, api):
    response = api(alice.token).post("/api/v1/submissions/", data=json.dumps(["add-one-cpu"]),
                                     content_type="application/json")
    assert response.status_code == 400
    error_of(response)


def test_it_refuses_a_language_the_pool_cannot_run(problem, alice, api):
    response = submit(api(alice.token), language="cuda")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "language_not_supported" and "language" in error["fields"]


def test_it_refuses_an_unknown_language(problem, alice, api):
    response = submit(api(alice.token), language="fortran")
    assert response.status_code == 400
    assert "language" in error_of(response)["fields"]


def test_a_detected_cuda_solution_is_refused_on_the_cpu_pool(problem, alice, api):
    cuda_source = 'cuda_src = "__global__ void k(float* x) {}"\nclass ModelNew: pass\n'
    response = submit(api(alice.token), source=cuda_source)
    assert response.status_code == 400
    assert error_of(response)["code"] == "language_not_supported"


def test_nothing_is_stored_for_a_refused_submission(problem, alice, api):
    submit(api(alice.token), problem="no-such-problem")
    submit(api(alice.token), source="")
    assert not Submission.objects.exists()
