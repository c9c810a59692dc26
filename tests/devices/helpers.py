"""Helpers of the devices tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import time
from typing import Any

from tests.site.conftest import claimed_job  # noqa: F401 - the devices tests' name for it


def heartbeat(api: Any, secret: str, **telemetry: Any) -> dict:
    response = api(runner=secret).post("/api/v1/runners/heartbeat/", {"host_info": {"hostname": "node"},
                                                                      "telemetry": telemetry}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def wait_for(what: str, check: Any, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")
