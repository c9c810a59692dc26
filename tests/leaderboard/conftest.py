import pytest


def clear_leaderboard_cache() -> None:
    """Deletes the leaderboard's cache keys only: in CI the cache shares its Redis with Celery and Channels."""
    from django.core.cache import cache

    client = cache._cache.get_client(write=True)  # type: ignore[attr-defined]
    for key in client.scan_iter(match=cache.make_key("leaderboard:*")):
        client.delete(key)


@pytest.fixture(autouse=True)
def empty_cache(embedded_redis):
    """The test run's Redis backs the cache (as in production); each test starts without cached boards."""
    clear_leaderboard_cache()
    yield
    clear_leaderboard_cache()
