"""An ANE problem's page publishes the reference weights (an .npz numpy reads without pickle) and the digest
of the reference outputs; both match what the validator and job preparation use."""

import io

import numpy as np

from ane_runner.problem import problem_load, reference_state_dict
from ane_runner.validate import validate
from tests.ane.helpers import EXAMPLES, POINTWISE


def test_the_page_links_the_weights_and_shows_the_validators_digest(ane_problem, client):
    page = client.get("/problems/pointwise-conv-relu-ane/")
    assert page.status_code == 200
    html = page.content.decode()
    report, _, _ = validate(POINTWISE.read_text(), (EXAMPLES / "mil/pointwise_conv_relu_ane.py").read_bytes(),
                            solution_name="solution.py", baseline=False)
    assert f'id="ane-digest">{report["reference"]["digest"]}<' in html
    assert 'href="/problems/pointwise-conv-relu-ane/ane-weights.npz"' in html


def test_the_weights_download_is_the_seeded_state_dict(ane_problem, client):
    response = client.get("/problems/pointwise-conv-relu-ane/ane-weights.npz")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="pointwise-conv-relu-ane-weights.npz"'
    weights = np.load(io.BytesIO(response.content), allow_pickle=False)
    expected = reference_state_dict(problem_load(POINTWISE.read_text()))
    assert sorted(weights.files) == sorted(expected)
    for key, value in expected.items():
        assert weights[key].dtype == np.float32
        np.testing.assert_array_equal(weights[key], value)


def test_a_problem_on_no_ane_pool_has_no_weights(ane_problem, client, api):
    from apps.devices.services import pool_get_or_create

    ane_problem.pools.set([pool_get_or_create(slug="cpu")[0]])
    assert client.get("/problems/pointwise-conv-relu-ane/ane-weights.npz").status_code == 404
    assert 'id="ane-reference"' not in client.get("/problems/pointwise-conv-relu-ane/").content.decode()
    assert api().get("/api/v1/problems/pointwise-conv-relu-ane/").json()["ane"] is None


def test_the_problem_api_gives_agents_the_weights_url_and_digest(ane_problem, client, api):
    body = api().get("/api/v1/problems/pointwise-conv-relu-ane/").json()
    assert body["ane"]["weights_url"] == "/problems/pointwise-conv-relu-ane/ane-weights.npz"
    page = client.get("/problems/pointwise-conv-relu-ane/").content.decode()
    assert f'id="ane-digest">{body["ane"]["digest"]}<' in page
    assert (body["ane"]["weights_seed"], body["ane"]["input_seed"]) == (0, 1)
    assert client.get(body["ane"]["weights_url"]).status_code == 200
