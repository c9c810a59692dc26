"""Every bad input on /submit/ comes back inline, beside its field, saying what to do."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.submissions.models import Submission
from tests.pages.fixtures import SOLUTION


@pytest.fixture
def signed_in(client, bob, problem):
    client.force_login(bob)
    return client


def _post(client, files=None, **data):
    payload = {"problem": "relu-scale", "pool": "cpu", "language": "", "source": SOLUTION}
    payload.update(data)
    if files:
        payload.update(files)
    r = client.post("/submit/", payload)
    assert r.status_code == 200, "an invalid form is shown again, not redirected"
    assert not Submission.objects.exists()
    return r


def _errors(r, field):
    return " ".join(r.context["form"].errors.get(field, []))


@pytest.mark.django_db
def test_it_explains_an_empty_source(signed_in):
    r = _post(signed_in, source="   \n")
    assert _errors(r, "source") == "The source is empty: paste your ModelNew solution or upload its file."
    html = r.content.decode()
    assert 'class="field has-error" id="field-source"' in html
    assert "Please correct the fields marked below." in html


@pytest.mark.django_db
def test_it_explains_an_unknown_problem(signed_in):
    r = _post(signed_in, problem="no-such-problem")
    assert _errors(r, "problem") == "No such problem: pick one from the list."


@pytest.mark.django_db
def test_it_explains_a_track_the_problem_is_not_offered_on(signed_in, gpu_pool):
    r = _post(signed_in, pool="h200")
    assert _errors(r, "pool") == "Use one of: cpu."


@pytest.mark.django_db
def test_it_explains_a_language_the_track_cannot_run(signed_in):
    r = _post(signed_in, language="cuda")
    assert _errors(r, "language") == "Pool cpu runs cpp."


@pytest.mark.django_db
def test_it_explains_a_detected_language_the_track_cannot_run(signed_in):
    cuda = SOLUTION.replace('cpp_sources="..."', 'cpp_sources="...", cuda_sources="__global__ void k() {}"')
    r = _post(signed_in, source=cuda)
    assert _errors(r, "language") == "Pool cpu runs cpp."


@pytest.mark.django_db
def test_it_refuses_both_pasted_and_uploaded_source(signed_in):
    upload = SimpleUploadedFile("s.py", SOLUTION.encode())
    r = _post(signed_in, files={"source_file": upload})
    assert r.context["form"].non_field_errors() == [
        "Give the source once: paste it or upload a file, not both."
    ]
    assert "Give the source once" in r.content.decode()


@pytest.mark.django_db
def test_it_refuses_a_file_that_is_not_text(signed_in):
    upload = SimpleUploadedFile("s.so", b"\x7fELF\x02\x01\x01\xff\xfe")
    r = _post(signed_in, source="", files={"source_file": upload})
    assert _errors(r, "source_file") == "The file is not UTF-8 text: upload your solution's .py file."


@pytest.mark.django_db
def test_it_refuses_an_oversized_source(signed_in, settings):
    settings.MAX_SOURCE_BYTES = 100
    r = _post(signed_in)
    assert _errors(r, "source").startswith(f"The source is {len(SOLUTION.encode()):,} bytes; the limit is 100.")


@pytest.mark.django_db
def test_it_says_when_to_retry_past_the_rate_limit(signed_in, settings):
    settings.SUBMISSIONS_PER_HOUR = 1
    first = signed_in.post("/submit/", {"problem": "relu-scale", "pool": "cpu", "source": SOLUTION})
    assert first.status_code == 302
    r = signed_in.post("/submit/", {"problem": "relu-scale", "pool": "cpu", "source": SOLUTION + "# 2\n"})
    assert r.status_code == 200
    errors = " ".join(r.context["form"].non_field_errors())
    assert "Rate limit: 1 submissions per hour per account" in errors
    assert "Try again in" in errors
    assert Submission.objects.count() == 1


@pytest.mark.django_db
def test_it_says_when_the_entrant_is_banned(signed_in, bob):
    from apps.submissions import services

    entrant, _ = services.entrant_create(name="bob", kind="human", owner=bob)
    entrant.is_banned = True
    entrant.ban_reason = "submitted a timing exploit"
    entrant.save()
    r = _post(signed_in)
    assert r.context["form"].non_field_errors() == [
        "Entrant bob is banned from submitting (submitted a timing exploit)."
    ]
