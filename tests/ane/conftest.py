"""The ANE tests' site fixtures (tests/ane/site.py); the Linux-only tests here need none of them."""

from tests.ane.site import alice, ane_pool, ane_problem, api, broker_queue, mac_runner  # noqa: F401
