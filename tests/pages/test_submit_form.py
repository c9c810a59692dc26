import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.submissions.models import Entrant, Submission
from tests.pages.fixtures import SOLUTION


def _post(client, **data):
    payload = {"problem": "relu-scale", "pool": "cpu", "language": "", "source": SOLUTION}
    payload.update(data)
    return client.post("/submit/", payload)


def _errors(response, field):
    form = response.context["form"]
    return " ".join(form.errors.get(field, []))


@pytest.mark.django_db
def test_it_asks_anonymous_visitors_to_log_in(client, problem):
    r = client.get("/submit/")
    assert r.status_code == 302
    assert r["Location"] == "/accounts/login/?next=/submit/"


@pytest.mark.django_db
def test_it_preselects_problem_and_pool_from_the_link(client, bob, problem):
    client.force_login(bob)
    html = client.get("/submit/?problem=relu-scale&pool=cpu").content.decode()
    assert '<option value="relu-scale" selected>L1 · ReLU and scale (relu-scale)</option>' in html
    assert '<option value="cpu" selected>cpu: CPU (2 cores)</option>' in html
    assert "Yourself (a new human entrant)" in html


@pytest.mark.django_db
def test_it_creates_a_human_entrant_on_the_first_submit(client, bob, problem):
    client.force_login(bob)
    r = _post(client)
    submission = Submission.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/submissions/{submission.pk}/"
    assert submission.entrant.name == "bob" and submission.entrant.kind == Entrant.KIND_HUMAN
    assert submission.entrant.owner == bob
    assert submission.language == "cpp"  # detected from load_inline(cpp_sources=...)
    assert submission.evaluations.get().status == "queued"
    # the second submit reuses that entrant
    _post(client, source=SOLUTION + "\n# second\n")
    assert Entrant.objects.filter(owner=bob).count() == 1 and Submission.objects.count() == 2


@pytest.mark.django_db
def test_it_picks_a_free_name_when_the_username_is_an_entrant_of_someone_else(client, bob, alice, problem):
    from apps.submissions import services

    services.entrant_create(name="bob", kind="agent", owner=alice)
    client.force_login(bob)
    assert _post(client).status_code == 302
    assert Submission.objects.get().entrant.name == "bob-2"


@pytest.mark.django_db
def test_it_submits_as_the_chosen_entrant(client, alice, alice_agent, problem):
    client.force_login(alice)
    r = _post(client, entrant=alice_agent.pk)
    assert r.status_code == 302
    assert Submission.objects.get().entrant == alice_agent


@pytest.mark.django_db
def test_it_refuses_another_users_entrant(client, bob, alice_agent, problem):
    client.force_login(bob)
    r = _post(client, entrant=alice_agent.pk)
    assert r.status_code == 200
    assert _errors(r, "entrant") == "Pick one of your own entrants."
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_it_accepts_a_file_upload(client, bob, problem):
    client.force_login(bob)
    upload = SimpleUploadedFile("solution.py", SOLUTION.encode(), content_type="text/x-python")
    r = client.post("/submit/", {"problem": "relu-scale", "pool": "cpu", "source": "", "source_file": upload})
    assert r.status_code == 302
    assert Submission.objects.get().source == SOLUTION


@pytest.mark.django_db
def test_it_returns_the_existing_evaluation_for_the_same_source(client, alice, alice_agent, alice_submission):
    client.force_login(alice)
    r = _post(client, entrant=alice_agent.pk)
    assert r.status_code == 302 and r["Location"] == f"/submissions/{alice_submission.pk}/"
    assert Submission.objects.count() == 1
    html = client.get(r["Location"]).content.decode()
    assert "You had already submitted this exact source" in html


@pytest.mark.django_db
def test_it_stores_browser_line_endings_as_newlines(client, alice, alice_agent, alice_submission):
    client.force_login(alice)
    r = _post(client, entrant=alice_agent.pk, source=SOLUTION.replace("\n", "\r\n"))
    # the same file as alice's API submission: the same hash, hence the existing evaluation
    assert r["Location"] == f"/submissions/{alice_submission.pk}/"
    assert Submission.objects.count() == 1
