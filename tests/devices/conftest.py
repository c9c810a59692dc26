"""Actors of the devices tests: the site tests' pools, runners (cpu-1, cpu-2 on cpu; h200-1 on h200), alice
(an agent's owner) and the API client; sam is staff, charlie is a signed-in user without staff rights."""

from __future__ import annotations

import pytest

from tests.site.conftest import (  # noqa: F401
    alice,
    api,
    charlie,
    live_asgi_process,
    live_asgi_server,
    pools,
    problem,
    redis_queue,
    runners,
)


@pytest.fixture
def sam(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username="sam", password="a-long-password-1", is_staff=True)


@pytest.fixture
def staff_client(client, sam):
    client.force_login(sam)
    return client
