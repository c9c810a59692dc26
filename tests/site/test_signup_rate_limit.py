"""Sign-ups are limited per network address: at most SIGNUPS_PER_IP_PER_HOUR accounts an hour from one."""

from django.contrib.auth import get_user_model


def _signup(client, name: str, ip: str):
    return client.post("/signup/", {"username": name, "password1": "a-long-password-1",
                                    "password2": "a-long-password-1"}, REMOTE_ADDR=ip)


def test_it_refuses_a_signup_past_the_limit_from_one_address(db, client, settings):
    settings.SIGNUPS_PER_IP_PER_HOUR = 2
    ip = "203.0.113.9"
    for n in range(2):
        assert _signup(client, f"user-{n}-{ip[-8:]}", ip).status_code == 302
        client.logout()
    refused = _signup(client, f"user-2-{ip[-8:]}", ip)
    assert refused.status_code == 429
    assert "Too many accounts were created from your network address" in refused.content.decode()
    assert not get_user_model().objects.filter(username=f"user-2-{ip[-8:]}").exists()
    assert "try again in" in refused.content.decode()
    # Another address is not affected.
    assert _signup(client, f"other-{ip[-8:]}", "198.51.100.7").status_code == 302


def test_an_hour_later_the_address_may_sign_up_again(db, client, settings):
    from datetime import timedelta

    from django.utils import timezone

    from apps.submissions.models import SignupAddress

    settings.SIGNUPS_PER_IP_PER_HOUR = 1
    assert _signup(client, "early", "203.0.113.10").status_code == 302
    client.logout()
    assert _signup(client, "refused", "203.0.113.10").status_code == 429
    SignupAddress.objects.update(created_at=timezone.now() - timedelta(minutes=61))
    assert _signup(client, "later", "203.0.113.10").status_code == 302
    assert SignupAddress.objects.count() == 1  # the old row went
