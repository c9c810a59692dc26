"""A small Python API for KernelHub's REST API, for agents and scripts.

    from kernelhub_client import Client
    client = Client.from_config()              # or Client("https://kernelhub.example", "TOKEN")
    sub = client.submit("l1-19-relu", open("relu_cuda.py").read(), hardware="h200")
    final = client.wait(sub["id"])             # polls until the evaluation is final
    print(final["verdict"], final["speedup_vs_eager"])

Every method returns the API's JSON as is (dicts and lists). Failures raise ApiError (the server answered
with an error) or NetworkError (no answer), both subclasses of ClientError with a message that says what to do.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from gpu_runner.contract import VERDICTS  # noqa: F401 - part of this module's interface

# Evaluation states after which nothing changes (apps/submissions: Evaluation.FINAL_STATES).
FINAL_STATUSES = ("done", "failed")


class ClientError(Exception):
    """Anything that went wrong talking to the site; `str()` is the message for a person."""


class ConfigError(ClientError):
    """No site URL or token: the user has to log in or set KERNELHUB_URL / KERNELHUB_TOKEN."""


class NetworkError(ClientError):
    """The site could not be reached (after retries)."""


class ApiError(ClientError):
    """The site answered with an error, in the API's shape {"error": {"code", "message", "fields"}}."""

    def __init__(self, status: int, code: str, message: str, fields: dict | None = None,
                 retry_after: float | None = None) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.retry_after = retry_after
        super().__init__(self.describe())

    def describe(self) -> str:
        text = f"{self.message} (HTTP {self.status}, {self.code})"
        for field, problems in self.fields.items():
            if isinstance(problems, list):
                problems = "; ".join(str(p) for p in problems)
            text += f"\n  {field}: {problems}"
        if self.status == 401:
            text += "\n  Check your token: kernelhub login --url URL --token TOKEN (or set KERNELHUB_TOKEN)."
        if self.status == 429 and self.retry_after is not None:
            text += f"\n  Rate limited: try again in {int(self.retry_after)} s."
        return text

    def as_dict(self) -> dict:
        return {"status": self.status, "code": self.code, "message": self.message, "fields": self.fields}


# --- Configuration -----------------------------------------------------------------------------------

def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kernelhub" / "config.json"


def config_read() -> dict:
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}. Run `kernelhub login` again to rewrite it.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a JSON object. Run `kernelhub login` again to rewrite it.")
    return data


def config_write(*, url: str, token: str) -> Path:
    """Writes the config with mode 0600 from the start: the token never sits in a world-readable file."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"url": url, "token": token}, f, indent=2)
        f.write("\n")
    os.chmod(tmp, 0o600)  # O_CREAT's mode is ignored when the file already existed
    os.replace(tmp, path)
    return path


def normalize_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"Site URL {url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000).")
    return url


# --- The client ----------------------------------------------------------------------------------------

def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Client:
    """One site, one token. Retries 429, 5xx and connection failures with backoff, a bounded number of times."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0, max_retries: int = 5,
                 backoff_base: float = 0.5, max_backoff: float = 30.0, max_retry_after: float = 120.0,
                 sleep: Callable[[float], None] = time.sleep,
                 on_retry: Callable[[str], None] | None = None) -> None:
        self.url = normalize_url(url)
        self.token = token
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.max_backoff = max_backoff
        # A server asking us to wait longer than this (an hourly quota, say) gets an error, not a silent hang.
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.on_retry = on_retry
        headers = {"Accept": "application/json", "User-Agent": "kernelhub-client/0.1"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    @classmethod
    def from_config(cls, *, url: str | None = None, token: str | None = None, **kwargs: Any) -> Client:
        """Explicit arguments, then KERNELHUB_URL / KERNELHUB_TOKEN, then the file written by `kernelhub login`."""
        stored = config_read()
        url = url or os.environ.get("KERNELHUB_URL") or stored.get("url")
        token = token or os.environ.get("KERNELHUB_TOKEN") or stored.get("token")
        if not url:
            raise ConfigError("No site URL: run `kernelhub login --url URL --token TOKEN` or set KERNELHUB_URL.")
        return cls(url, token, **kwargs)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The API's operations -------------------------------------------------------------------------

    def problems(self, *, hardware: str | None = None, level: int | None = None) -> list[dict]:
        params: dict[str, Any] = {}
        if hardware:
            params["hardware"] = hardware
        if level is not None:
            params["level"] = level
        return _as_rows(self.request("GET", "/api/v1/problems/", params=params))

    def problem(self, slug: str) -> dict:
        return self.request("GET", f"/api/v1/problems/{slug}/")

    def submit(self, problem: str, source: str, *, language: str | None = None,
               hardware: str | None = None, rerun: bool = False) -> dict:
        return self._submit({"problem": problem, "source": source, "language": language or None,
                             "hardware": hardware or None, "rerun": rerun or None})

    def submit_workdir(self, problem: str | None, archive: bytes, *, rules: str | None = None,
                       hardware: str | None = None, rerun: bool = False) -> dict:
        """A CUDA Agent workdir, zipped or as .tar.gz; problem None: the site finds it from the workdir's model.py."""
        import base64

        return self._submit({"workdir_base64": base64.b64encode(archive).decode("ascii"), "problem": problem or None,
                             "rules": rules or None, "hardware": hardware or None, "rerun": rerun or None})

    def _submit(self, fields: dict[str, Any]) -> dict:
        """POST a submission with the fields that are not None."""
        if not self.token:
            raise ConfigError("Submitting needs a token: run `kernelhub login --url URL --token TOKEN` "
                              "or set KERNELHUB_TOKEN.")
        body = {k: v for k, v in fields.items() if v is not None}
        # Safe to retry: the site deduplicates the same source (the same files) for the same problem and pool.
        return self.request("POST", "/api/v1/submissions/", json=body)

    def submission(self, submission_id: int | str) -> dict:
        return self.request("GET", f"/api/v1/submissions/{submission_id}/")

    def leaderboard(self, *, hardware: str | None = None, level: int | None = None) -> dict:
        """{"hardware", "level", "problems", "rows": [one per entrant, ranked]}."""
        params: dict[str, Any] = {}
        if hardware:
            params["hardware"] = hardware
        if level is not None:
            params["level"] = level
        data = self.request("GET", "/api/v1/leaderboard/", params=params)
        if isinstance(data, list):
            return {"hardware": hardware, "level": level, "rows": data}
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            raise ApiError(200, "bad_response", "The leaderboard came without rows; is the client older than "
                                                "the site?")
        return data

    def wait(self, submission_id: int | str, *, timeout: float = 3600.0, poll_min: float = 0.5,
             poll_max: float = 5.0, on_update: Callable[[dict], None] | None = None) -> dict:
        """Polls the submission until its evaluation is final, calling `on_update` with every answer.

        The poll interval starts at `poll_min` and grows to `poll_max` while nothing changes; it drops back when
        the stage moves, so a fast evaluation is seen quickly and a slow one does not hammer the site.
        """
        deadline = time.monotonic() + timeout
        interval = poll_min
        last_key = None
        while True:
            data = self.submission(submission_id)
            if on_update:
                on_update(data)
            if data.get("status") in FINAL_STATUSES:
                return data
            key = (data.get("status"), data.get("stage"))
            interval = poll_min if key != last_key else min(poll_max, interval * 1.5)
            last_key = key
            if time.monotonic() + interval > deadline:
                raise WaitTimeout(f"Submission {submission_id} is still {data.get('status')} "
                                  f"({data.get('stage')}) after {int(timeout)} s; check later with "
                                  f"`kernelhub status {submission_id}`.", data)
            self.sleep(interval)

    # HTTP with retries ------------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise NetworkError(f"Cannot reach {self.url} ({type(exc).__name__}: {exc}) after "
                                       f"{attempt + 1} tries. Is the site up and the URL right?") from exc
                self._pause(attempt, None, f"{type(exc).__name__} talking to {self.url}")
                attempt += 1
                continue
            if response.status_code == 429 or response.status_code >= 500:
                retry_after = _retry_after_seconds(response.headers.get("Retry-After"))
                too_long = retry_after is not None and retry_after > self.max_retry_after
                if attempt < self.max_retries and not too_long:
                    self._pause(attempt, retry_after, f"HTTP {response.status_code} from {method} {path}")
                    attempt += 1
                    continue
            if response.status_code >= 400:
                raise _api_error(response)
            if response.status_code == 204 or not response.content:
                return None
            try:
                return response.json()
            except ValueError as exc:
                raise ApiError(response.status_code, "bad_response",
                               f"{method} {path} answered with something that is not JSON; is {self.url} "
                               "a KernelHub site?") from exc

    def _pause(self, attempt: int, retry_after: float | None, why: str) -> None:
        if retry_after is not None:
            delay = retry_after
        else:
            # Exponential backoff with jitter, so many agents behind one outage do not retry in step.
            delay = min(self.max_backoff, self.backoff_base * 2 ** attempt) * (0.5 + random.random() / 2)
        if self.on_retry:
            self.on_retry(f"{why}; retrying in {delay:.1f} s (retry {attempt + 1} of {self.max_retries})")
        self.sleep(delay)


class WaitTimeout(ClientError):
    def __init__(self, message: str, last: dict) -> None:
        super().__init__(message)
        self.last = last


def _as_rows(data: Any) -> list[dict]:
    """Lists come bare or paginated (DRF's {"results": [...]}), or under "rows"."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "rows"):
            if isinstance(data.get(key), list):
                return data[key]
    raise ApiError(200, "bad_response", "Expected a list from the API; is the client older than the site?")


def _api_error(response: httpx.Response) -> ApiError:
    retry_after = _retry_after_seconds(response.headers.get("Retry-After"))
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return ApiError(response.status_code, str(error.get("code") or "error"),
                        str(error.get("message") or response.reason_phrase),
                        error.get("fields") if isinstance(error.get("fields"), dict) else {}, retry_after)
    if isinstance(body, dict) and "detail" in body:  # DRF's own shape, should an endpoint not use ours
        return ApiError(response.status_code, "error", str(body["detail"]), {}, retry_after)
    text = response.text.strip().splitlines()[0][:200] if response.text.strip() else response.reason_phrase
    return ApiError(response.status_code, "http_error", f"{response.request.method} {response.request.url.path}"
                    f" failed: {text}", {}, retry_after)
