"""A CUDA Agent workdir reaches the site as an archive (a multipart `workdir` part, `workdir_base64` in JSON, or
the web form), is stored as its text form whichever way it came, finds its problem by slug or by its model.py,
and is refused with a clear message when its model.py is another problem or the archive is hostile."""

import base64
import io

from apps.submissions.models import Submission
from gpu_runner import workdir
from tests.site.conftest import error_of
from tests.workdirs.helpers import WORKDIR_CPU, WORKDIR_CUDA, tar_gz_bytes, workdir_files, zip_bytes

FILES = workdir_files(WORKDIR_CPU)


def _multipart(client, data: bytes, name: str = "workdir.zip", **fields):
    upload = io.BytesIO(data)
    upload.name = name
    return client.post("/api/v1/submissions/", {"workdir": upload, "hardware": "cpu", **fields}, format="multipart")


def _json(client, data: bytes, **fields):
    body = {"workdir_base64": base64.b64encode(data).decode(), "hardware": "cpu", **fields}
    return client.post("/api/v1/submissions/", body, format="json")


def test_a_multipart_zip_finds_its_problem_from_model_py(workdir_problem, alice, api):
    response = _multipart(api(alice.token), zip_bytes(FILES))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["problem"] == workdir_problem.slug and body["language"] == "cpp" and body["hardware"] == "cpu"
    stored = Submission.objects.get(pk=body["id"]).source
    wd = workdir.parse_bundle(stored)
    assert {k: v.encode() for k, v in wd.files.items()} == FILES  # every file, byte for byte
    assert wd.rules == "cuda_agent"


def test_base64_json_and_a_tar_gz_are_the_same_submission(workdir_problem, alice, api):
    first = _multipart(api(alice.token), zip_bytes(FILES), problem=workdir_problem.slug)
    assert first.status_code == 201, first.json()
    again = _json(api(alice.token), tar_gz_bytes(FILES))
    assert again.status_code == 200, again.json()
    assert again.json()["duplicate"] is True and again.json()["id"] == first.json()["id"]


def test_the_rule_set_can_be_chosen(workdir_problem, alice, api):
    response = _json(api(alice.token), zip_bytes(FILES), rules="kernelhub")
    assert response.status_code == 201, response.json()
    assert workdir.parse_bundle(Submission.objects.get(pk=response.json()["id"]).source).rules == "kernelhub"
    unknown = _json(api(alice.token), zip_bytes(FILES), rules="anything-goes")
    assert unknown.status_code == 400 and "Unknown rule set" in error_of(unknown)["message"]


def test_a_model_py_that_differs_from_the_problem_is_refused(workdir_problem, alice, api):
    files = {**FILES, "model.py": FILES["model.py"].replace(b"N = 1 << 16", b"N = 1 << 20")}
    by_slug = _multipart(api(alice.token), zip_bytes(files), problem=workdir_problem.slug)
    assert by_slug.status_code == 400
    error = error_of(by_slug)
    assert error["code"] == "problem_mismatch" and "model.py differs from problem axpby-fused" in error["message"]
    unmatched = _multipart(api(alice.token), zip_bytes(files))
    assert unmatched.status_code == 400 and "none of this site's problems" in error_of(unmatched)["message"]
    assert not Submission.objects.exists()


def test_hostile_archives_are_refused_through_the_api(workdir_problem, alice, api):
    slip = _multipart(api(alice.token), zip_bytes({**FILES, "../evil.py": b"x = 1\n"}))
    assert slip.status_code == 400 and "leaves the workdir" in error_of(slip)["message"]
    binary = _json(api(alice.token), zip_bytes({**FILES, "build/cuda_extension.so": b"\x7fELF"}))
    assert binary.status_code == 400
    assert "remove build outputs" in error_of(binary)["message"] and error_of(binary)["code"] == "invalid_workdir"
    assert not Submission.objects.exists()


def test_a_cuda_workdir_goes_to_a_gpu_pool_not_the_cpu(workdir_problem, alice, api):
    cuda = workdir_files(WORKDIR_CUDA)
    refused = _multipart(api(alice.token), zip_bytes(cuda))
    assert refused.status_code == 400 and "cannot run cuda" in error_of(refused)["message"]
    taken = _multipart(api(alice.token), zip_bytes(cuda), hardware="h200")
    assert taken.status_code == 201, taken.json()
    assert taken.json()["language"] == "cuda"


def test_the_web_form_takes_the_zip_and_the_page_shows_the_files_and_the_rule_set(workdir_problem, alice, client):
    client.force_login(alice.user)
    upload = io.BytesIO(zip_bytes(FILES, prefix="agent_workdir/"))
    upload.name = "agent_workdir.zip"
    response = client.post("/submit/", {"pool": "cpu", "entrant": alice.entrant.pk, "source_file": upload})
    assert response.status_code == 302, response.content.decode()[-2000:]
    submission = Submission.objects.get()
    assert submission.problem == workdir_problem
    page = client.get(response["Location"]).content.decode()
    assert 'id="rule-set" data-rules="cuda_agent">CUDA Agent rules<' in page
    assert "CUDA Agent workdir" in page and "kernels/axpby_binding.cpp" in page and "REGISTER_BINDING" in page


def test_a_pool_can_select_the_rule_set(workdir_problem, alice, api, settings):
    settings.RULES_BY_POOL = {"cpu": "kernelhub"}
    response = _json(api(alice.token), zip_bytes(FILES), rules="cuda_agent")
    assert response.status_code == 201, response.json()
    assert workdir.parse_bundle(Submission.objects.get(pk=response.json()["id"]).source).rules == "kernelhub"
