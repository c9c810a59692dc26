"""The runner's side of the site's REST API (docs/ARCHITECTURE.md, "Dispatch and the runner protocol").

Runners never touch the site's database: everything goes through these calls, authenticated by the runner's
secret (`Authorization: Runner ...`) and, for a job, its per-job token (`X-Job-Token`). Transient failures
(no connection, 5xx, 429) are retried with backoff; a 4xx is the site's answer and raises SiteRefused.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

import httpx

logger = logging.getLogger(__name__)


class SiteError(Exception):
    """The site could not be reached (or kept failing) for longer than the call may wait."""


class SiteRefused(SiteError):
    """The site answered 4xx: the request is wrong or no longer allowed (a job re-queued, a runner disabled)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.status = status
        self.code = code
        self.message = message


class SiteClient:
    def __init__(self, site_url: str, secret: str, *, timeout: float = 30.0, retry_for_s: float = 120.0) -> None:
        if not site_url.startswith(("http://", "https://")):
            raise ValueError(f"The site URL {site_url!r} must start with http:// or https://.")
        if not secret:
            raise ValueError("No runner secret: pass --token (from `manage.py create_runner`).")
        self.site_url = site_url.rstrip("/")
        self.retry_for_s = retry_for_s
        self._http = httpx.Client(base_url=self.site_url, timeout=timeout,
                                  headers={"Authorization": f"Runner {secret}", "Accept": "application/json",
                                           "User-Agent": "kernelhub-runner/1"})

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, job_token: str | None = None, json: Any = None,
                retry_for_s: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + (self.retry_for_s if retry_for_s is None else retry_for_s)
        headers = {"X-Job-Token": job_token} if job_token else {}
        attempt = 0
        while True:
            why = ""
            try:
                response = self._http.request(method, path, headers=headers, json=json)
            except httpx.TransportError as e:
                why = f"{type(e).__name__}: {e}"
            else:
                if response.status_code < 400:
                    return response.json() if response.content else {}
                if response.status_code != 429 and response.status_code < 500:
                    raise _refusal(response)
                why = f"HTTP {response.status_code}"
            delay = min(30.0, 0.5 * 2 ** attempt) * (0.5 + random.random() / 2)
            if time.monotonic() + delay > deadline:
                raise SiteError(f"{method} {self.site_url}{path} kept failing ({why}); giving up.")
            logger.warning("%s %s failed (%s); retrying in %.1f s", method, path, why, delay)
            time.sleep(delay)
            attempt += 1

    # --- The runner -------------------------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        return self.request("GET", "/api/v1/runners/me/")

    def heartbeat(self, *, host_info: dict[str, Any], telemetry: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", "/api/v1/runners/heartbeat/", json={"host_info": host_info,
                                                                        "telemetry": telemetry}, retry_for_s=10)

    # --- A job ------------------------------------------------------------------------------------------

    def claim(self, evaluation_id: int, job_token: str) -> dict[str, Any]:
        return self.request("POST", f"/api/v1/jobs/{evaluation_id}/claim/", job_token=job_token)

    def stage(self, evaluation_id: int, job_token: str, stage: str) -> dict[str, Any]:
        return self.request("POST", f"/api/v1/jobs/{evaluation_id}/stage/", job_token=job_token,
                            json={"stage": stage}, retry_for_s=20)

    def result(self, evaluation_id: int, job_token: str, result: dict[str, Any]) -> dict[str, Any]:
        # A result is worth waiting for: the site may be restarting.
        return self.request("POST", f"/api/v1/jobs/{evaluation_id}/result/", job_token=job_token,
                            json={"result": result}, retry_for_s=600)

    def fail(self, evaluation_id: int, job_token: str, message: str) -> dict[str, Any]:
        return self.request("POST", f"/api/v1/jobs/{evaluation_id}/fail/", job_token=job_token,
                            json={"message": message[:2000]})


def _refusal(response: httpx.Response) -> SiteRefused:
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    return SiteRefused(response.status_code, str(error.get("code") or "http_error"),
                       str(error.get("message") or response.text[:300] or response.reason_phrase))
