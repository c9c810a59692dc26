"""A zipped .mlpackage reaches the site three ways (the form, base64 in JSON, a multipart part), is stored as
`base64:<zip>` whichever way it came, and is held to MAX_PACKAGE_BYTES with an error that says what to do."""

import base64
import io
import zipfile

from apps.submissions.models import Submission
from tests.ane.site import POOL, submit


def _zip(payload: bytes = b"weights" * 100) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("model.mlpackage/Manifest.json", '{"fileFormatVersion": "1.0.0"}')
        z.writestr("model.mlpackage/Data/com.apple.CoreML/weights/weight.bin", payload)
    return buf.getvalue()


def _multipart(client, data: bytes, **fields):
    upload = io.BytesIO(data)
    upload.name = "model.mlpackage.zip"
    return client.post("/api/v1/submissions/", {"problem": "pointwise-conv-relu-ane", "hardware": POOL,
                                                "package": upload, **fields}, format="multipart")


def test_it_takes_base64_in_json_as_a_coreml_submission(ane_problem, alice, api):
    data = _zip()
    response = submit(api(alice.token), "base64:" + base64.b64encode(data).decode())
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["language"] == "coreml" and body["hardware"] == POOL
    stored = Submission.objects.get(pk=body["id"]).source
    assert base64.b64decode(stored.removeprefix("base64:")) == data


def test_a_multipart_package_is_the_same_submission_as_its_base64(ane_problem, alice, api):
    data = _zip()
    first = _multipart(api(alice.token), data)
    assert first.status_code == 201, first.json()
    again = submit(api(alice.token), "base64:" + base64.b64encode(data).decode())
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["id"] == first.json()["id"]


def test_a_package_over_the_limit_is_refused_with_the_limit(ane_problem, alice, api, settings):
    data = _zip(bytes(range(256)) * 40)
    settings.MAX_PACKAGE_BYTES = len(data) - 1
    for response in (_multipart(api(alice.token), data),
                     submit(api(alice.token), "base64:" + base64.b64encode(data).decode())):
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "too_large"
        assert f"{len(data):,} bytes" in error["message"] and f"{len(data) - 1:,}" in error["message"]
        assert "MAX_PACKAGE_BYTES" in error["message"]
    assert not Submission.objects.exists()


def test_a_package_above_the_python_source_limit_is_accepted(ane_problem, alice, api, settings):
    data = _zip(bytes(range(256)) * 40)
    settings.MAX_SOURCE_BYTES = len(data) // 2
    assert _multipart(api(alice.token), data).status_code == 201


def test_bad_base64_and_non_zips_are_explained(ane_problem, alice, api):
    not_base64 = submit(api(alice.token), "base64:this is not base64!")
    assert not_base64.status_code == 400
    assert "not valid base64" in not_base64.json()["error"]["message"]
    not_zip = submit(api(alice.token), "base64:" + base64.b64encode(b"just bytes").decode())
    assert not_zip.status_code == 400
    assert "zip the .mlpackage folder" in not_zip.json()["error"]["message"]


def test_a_package_and_a_source_together_are_refused(ane_problem, alice, api):
    response = _multipart(api(alice.token), _zip(), source="def build(weights, input_shapes): ...")
    assert response.status_code == 400
    assert "not both" in response.json()["error"]["fields"]["package"][0]


def test_the_web_form_takes_a_zip_file(ane_problem, alice, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice.user)
    data = _zip()
    response = client.post("/submit/", {
        "entrant": alice.entrant.pk, "problem": "pointwise-conv-relu-ane", "pool": POOL,
        "source_file": SimpleUploadedFile("model.mlpackage.zip", data, content_type="application/zip"),
    })
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    assert submission.language == "coreml"
    assert base64.b64decode(submission.source.removeprefix("base64:")) == data
    page = client.get(response["Location"]).content.decode()
    assert 'id="solution-package"' in page and "solution-source" not in page


def test_the_web_form_refuses_a_zip_over_the_limit(ane_problem, alice, client, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice.user)
    data = _zip()
    settings.MAX_PACKAGE_BYTES = len(data) - 1
    response = client.post("/submit/", {
        "entrant": alice.entrant.pk, "problem": "pointwise-conv-relu-ane", "pool": POOL,
        "source_file": SimpleUploadedFile("model.mlpackage.zip", data, content_type="application/zip"),
    })
    assert response.status_code == 200 and not Submission.objects.exists()
    assert f"the limit is {len(data) - 1:,}" in response.content.decode()


def test_a_package_with_megabytes_of_weights_goes_through_json_and_multipart(ane_problem, alice, api):
    import os

    # 3 MiB of incompressible weights: above Django's default 2.5 MiB request-body limit once base64-encoded.
    data = _zip(os.urandom(3 * 1024 * 1024))
    response = submit(api(alice.token), "base64:" + base64.b64encode(data).decode())
    assert response.status_code == 201, response.json()
    again = _multipart(api(alice.token), data)
    assert again.status_code == 200 and again.json()["duplicate"] is True


def test_a_body_over_djangos_limit_gets_the_error_shape_with_what_to_do(ane_problem, alice, api, settings):
    data = _zip(bytes(range(256)) * 40)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = len(data)  # the base64 text is a third larger
    response = submit(api(alice.token), "base64:" + base64.b64encode(data).decode())
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "too_large" and f"over {len(data):,} bytes" in error["message"]
    assert "multipart `package` part" in error["message"]
