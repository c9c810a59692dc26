"""Sign-ups are limited per network address: at most SIGNUPS_PER_IP_PER_HOUR accounts an hour from one."""

import secrets

from django.contrib.auth import get_user_model


def _signup(client, name: str, ip: str):
    return client.post("/signup/", {"username": name, "password1": "a-long-password-1",
                                    "password2": "a-long-password-1"}, REMOTE_ADDR=ip)


def test_it_refuses_a_signup_past_the_limit_from_one_address(db, embedded_redis, client, settings):
    settings.SIGNUPS_PER_IP_PER_HOUR = 2
    ip = f"203.0.113.{secrets.randbelow(250) + 1}-{secrets.token_hex(4)}"  # unique: the cache outlives a test
    for n in range(2):
        assert _signup(client, f"user-{n}-{ip[-8:]}", ip).status_code == 302
        client.logout()
    refused = _signup(client, f"user-2-{ip[-8:]}", ip)
    assert refused.status_code == 429
    assert "Too many accounts were created from your network address" in refused.content.decode()
    assert not get_user_model().objects.filter(username=f"user-2-{ip[-8:]}").exists()
    # Another address is not affected.
    assert _signup(client, f"other-{ip[-8:]}", f"198.51.100.7-{ip[-8:]}").status_code == 302
