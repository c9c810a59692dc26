import pytest

from apps.submissions.models import ApiToken, Entrant, token_hash


@pytest.mark.django_db
def test_it_asks_anonymous_visitors_to_log_in(client):
    assert client.get("/me/tokens/")["Location"] == "/accounts/login/?next=/me/tokens/"


@pytest.mark.django_db
def test_it_creates_an_entrant_and_shows_its_token_once(client, bob):
    client.force_login(bob)
    r = client.post("/me/tokens/", {"action": "create_entrant", "name": "bob-llm", "kind": "llm",
                                    "model_name": "Frontier", "model_version": "2026-11"})
    assert r.status_code == 200
    token = r.context["new_token"]
    entrant = Entrant.objects.get(name="bob-llm")
    assert entrant.owner == bob and entrant.kind == "llm" and entrant.model_name == "Frontier"
    assert ApiToken.objects.filter(entrant=entrant, key_hash=token_hash(token)).exists()
    assert token in r.content.decode()
    # shown once: the next visit lists its prefix only
    html = client.get("/me/tokens/").content.decode()
    assert token not in html and f"{token[:10]}…" in html


@pytest.mark.django_db
def test_it_explains_a_taken_entrant_name(client, bob, alice_agent):
    client.force_login(bob)
    r = client.post("/me/tokens/", {"action": "create_entrant", "name": "Alice-Agent", "kind": "agent"})
    assert r.context["entrant_form"].errors["name"] == [
        "An entrant named “Alice-Agent” exists already: pick another name."
    ]
    assert not Entrant.objects.filter(owner=bob).exists()


@pytest.mark.django_db
def test_it_does_not_offer_the_baseline_kind(client, bob):
    client.force_login(bob)
    r = client.post("/me/tokens/", {"action": "create_entrant", "name": "fake-eager", "kind": "baseline"})
    assert "kind" in r.context["entrant_form"].errors
    assert not Entrant.objects.filter(name="fake-eager").exists()


@pytest.mark.django_db
def test_it_creates_and_revokes_a_token_for_an_own_entrant(client, alice, alice_agent):
    client.force_login(alice)
    r = client.post("/me/tokens/", {"action": "create_token", "entrant": alice_agent.pk, "label": "cluster"})
    token = r.context["new_token"]
    row = ApiToken.objects.get(key_hash=token_hash(token))
    assert row.entrant == alice_agent and row.label == "cluster"

    r = client.post("/me/tokens/", {"action": "revoke_token", "token": row.pk})
    assert r.status_code == 302
    row.refresh_from_db()
    assert row.revoked_at is not None


@pytest.mark.django_db
def test_it_refuses_tokens_for_or_of_someone_elses_entrant(client, bob, alice_agent):
    client.force_login(bob)
    before = ApiToken.objects.count()
    r = client.post("/me/tokens/", {"action": "create_token", "entrant": alice_agent.pk}, follow=True)
    assert "Pick one of your own entrants to create a token for." in r.content.decode()
    assert ApiToken.objects.count() == before

    alices = ApiToken.objects.get(entrant=alice_agent)
    r = client.post("/me/tokens/", {"action": "revoke_token", "token": alices.pk}, follow=True)
    assert "That token is not one of yours, or no longer exists." in r.content.decode()
    alices.refresh_from_db()
    assert alices.revoked_at is None
