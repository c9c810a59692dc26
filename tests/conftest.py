"""Shared test set-up. Must import without Django: the GPU tests run on runner hosts that lack it."""

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def embedded_redis():
    """The embedded Redis of the default set-up, when REDIS_URL does not name a server (as in CI)."""
    if os.environ.get("REDIS_URL"):
        yield None
        return
    from django.conf import settings

    from kernelhub import embedded_redis as er

    server = er.start(Path(settings.EMBEDDED_REDIS_SOCKET))
    yield server
    server.shutdown()
