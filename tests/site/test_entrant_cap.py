"""An account owns at most ENTRANTS_PER_ACCOUNT entrants; staff raise it per account (AccountLimits, on the
user's admin page). Beyond it, a clear error that says what to do."""

import pytest

from apps.submissions.models import AccountLimits, Entrant
from apps.submissions.services import SubmissionError, entrant_create


def test_the_tokens_page_refuses_an_entrant_past_the_cap(alice, client, settings):
    settings.ENTRANTS_PER_ACCOUNT = 2  # alice owns one already
    client.force_login(alice.user)
    ok = client.post("/me/tokens/", {"action": "create_entrant", "name": "alice-two", "kind": "agent"})
    assert ok.status_code == 200 and ok.context["new_token"]
    refused = client.post("/me/tokens/", {"action": "create_entrant", "name": "alice-three", "kind": "agent"})
    assert refused.context["new_token"] is None
    text = refused.content.decode()
    assert "the most it may own (2)" in text and "raise your account" in text
    assert not Entrant.objects.filter(name="alice-three").exists()
    assert Entrant.objects.filter(owner=alice.user).count() == 2


def test_staff_raise_the_cap_for_one_account(alice, bob, settings):
    settings.ENTRANTS_PER_ACCOUNT = 1
    with pytest.raises(SubmissionError) as refused:
        entrant_create(name="alice-two", kind="agent", owner=alice.user)
    assert refused.value.code == "entrant_limit" and refused.value.status == 403
    AccountLimits.objects.create(user=alice.user, max_entrants=3)
    entrant_create(name="alice-two", kind="agent", owner=alice.user)
    entrant_create(name="alice-three", kind="agent", owner=alice.user)
    with pytest.raises(SubmissionError):
        entrant_create(name="alice-four", kind="agent", owner=alice.user)
    # Bob still has the default.
    with pytest.raises(SubmissionError):
        entrant_create(name="bob-two", kind="llm", owner=bob.user)


def test_the_cap_is_on_the_users_admin_page(alice, client, django_user_model):
    admin = django_user_model.objects.create_superuser(username="root", password="a-long-password-1")
    client.force_login(admin)
    page = client.get(f"/admin/auth/user/{alice.user.pk}/change/")
    assert page.status_code == 200
    assert "max_entrants" in page.content.decode()
    form = page.context["adminform"].form
    data = {key: value for key, value in form.initial.items() if value is not None and key != "password"}
    data.update({"limits-TOTAL_FORMS": "1", "limits-INITIAL_FORMS": "0", "limits-MIN_NUM_FORMS": "0",
                 "limits-MAX_NUM_FORMS": "1", "limits-0-max_entrants": "7", "limits-0-user": str(alice.user.pk),
                 "date_joined_0": alice.user.date_joined.strftime("%Y-%m-%d"),
                 "date_joined_1": alice.user.date_joined.strftime("%H:%M:%S")})
    data.pop("date_joined", None)
    data.pop("groups", None)
    data.pop("user_permissions", None)
    response = client.post(f"/admin/auth/user/{alice.user.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    assert AccountLimits.objects.get(user=alice.user).max_entrants == 7


def test_staff_accounts_have_no_cap(charlie, settings):
    settings.ENTRANTS_PER_ACCOUNT = 1
    charlie.is_staff = True
    charlie.save()
    for n in range(3):
        entrant_create(name=f"staff-{n}", kind="agent", owner=charlie)
