import pytest
from django.contrib import admin
from django.urls import reverse

from apps.devices.models import HardwarePool, Runner
from apps.submissions.models import ApiToken, Entrant, Evaluation, Problem, ProblemVersion, Submission

MODELS = [HardwarePool, Runner, Problem, ProblemVersion, Entrant, ApiToken, Submission, Evaluation]


@pytest.fixture
def data(alice_submission, cpu_pool):
    from apps.devices import services as device_services

    device_services.runner_create(name="cpu-runner-1", pool=cpu_pool)
    return alice_submission


def test_it_registers_every_model_of_our_apps():
    from django.apps import apps

    for label in ("devices", "submissions", "leaderboard"):
        for model in apps.get_app_config(label).get_models():
            assert admin.site.is_registered(model), f"{label}.{model.__name__} has no admin"


@pytest.mark.django_db
def test_it_renders_every_changelist_and_change_page(admin_client, data):
    for model in MODELS:
        opts = model._meta
        changelist = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        r = admin_client.get(changelist)
        assert r.status_code == 200, f"{changelist}: {r.status_code}"
        obj = model.objects.first()
        assert obj is not None, f"no {model.__name__} in the fixture"
        change = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
        r = admin_client.get(change)
        assert r.status_code == 200, f"{change}: {r.status_code}"


@pytest.mark.django_db
def test_it_searches_and_filters_submissions(admin_client, data):
    url = reverse("admin:submissions_submission_changelist")
    r = admin_client.get(url, {"q": "alice-agent", "moderation__exact": "ok"})
    assert r.status_code == 200
    assert f">{data.pk}<" in r.content.decode()
    r = admin_client.get(url, {"q": "nobody-by-this-name"})
    assert "0 submissions" in r.content.decode()


@pytest.mark.django_db
def test_it_shows_hashes_read_only(admin_client, data):
    token = ApiToken.objects.first()
    html = admin_client.get(reverse("admin:submissions_apitoken_change", args=[token.pk])).content.decode()
    assert token.key_hash in html
    assert 'name="key_hash"' not in html  # shown, not editable
    runner = Runner.objects.first()
    html = admin_client.get(reverse("admin:devices_runner_change", args=[runner.pk])).content.decode()
    assert runner.secret_hash in html and 'name="secret_hash"' not in html


@pytest.mark.django_db
def test_it_revokes_tokens_from_the_admin(admin_client, data):
    token = ApiToken.objects.first()
    r = admin_client.post(reverse("admin:submissions_apitoken_changelist"),
                          {"action": "revoke", "_selected_action": [token.pk]})
    assert r.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
