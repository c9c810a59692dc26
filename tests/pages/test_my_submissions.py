import pytest


@pytest.mark.django_db
def test_it_lists_the_users_own_submissions_only(client, alice, bob, alice_submission):
    client.force_login(alice)
    html = client.get("/me/submissions/").content.decode()
    assert f'href="/submissions/{alice_submission.pk}/"' in html
    assert "ReLU and scale" in html and "alice-agent" in html

    client.force_login(bob)
    html = client.get("/me/submissions/").content.decode()
    assert f'href="/submissions/{alice_submission.pk}/"' not in html
    assert "No submissions yet." in html


@pytest.mark.django_db
def test_it_asks_anonymous_visitors_to_log_in(client):
    assert client.get("/me/submissions/")["Location"] == "/accounts/login/?next=/me/submissions/"
