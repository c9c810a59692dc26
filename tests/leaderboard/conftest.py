import pytest


@pytest.fixture(autouse=True)
def empty_cache(embedded_redis):
    """The test run's own Redis backs the cache (as in production); each test starts with it empty."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
