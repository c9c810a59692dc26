"""A live ASGI server for browser and end-to-end tests.

uvicorn serves kernelhub.asgi:application (HTTP and websockets) in a subprocess, on a free port, against the
pytest-django test database and the test run's Redis, so that a page, its websocket and the test body all see
the same data and the same channel layer. Use it from a test with:

    from tests.live import live_asgi_server, live_asgi_process  # noqa: F401  (in a conftest.py)

    def test_it_...(live_asgi_server):   # a base URL such as "http://127.0.0.1:40123"

`runner_process` adds a real cpu runner (`python -m gpu_runner serve`) that evaluates the jobs the live
server sends to pool.cpu.

`live_asgi_server` asks for `transactional_db`: the server is another process, so it only sees committed rows.
Only the standard library and httpx are imported at module level (tests/ must import without Django).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 60.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database_url_for(settings_dict: dict) -> str:
    """The DATABASE_URL that points another process at the database this process uses now (the test one)."""
    engine = settings_dict["ENGINE"]
    name = str(settings_dict["NAME"])
    if engine.endswith("sqlite3"):
        if name == ":memory:" or name.startswith("file:"):
            raise RuntimeError(
                "The live server needs the SQLite test database to be a file; kernelhub/settings.py sets "
                "DATABASES['default']['TEST']['NAME'] for that: keep it."
            )
        return f"sqlite:///{name}"
    if "postgresql" in engine:
        user = quote(settings_dict.get("USER") or "", safe="")
        password = quote(settings_dict.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        return f"postgres://{auth}{host}:{port}/{quote(name, safe='')}"
    raise RuntimeError(f"The live server does not know how to point at a {engine} database.")


class LiveServer:
    """A uvicorn subprocess serving the site on 127.0.0.1:port."""

    def __init__(self, *, database_url: str, var_dir: Path, port: int | None = None) -> None:
        self.database_url = database_url
        self.var_dir = var_dir
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = var_dir / f"live-asgi-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ)
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "kernelhub.settings",
                "DATABASE_URL": self.database_url,
                # Hold no connection between requests: the test process flushes tables between tests and,
                # on PostgreSQL, drops the test database at the end.
                "DB_CONN_MAX_AGE": "0",
                # Same var dir, hence the same embedded Redis socket (channel layer) unless REDIS_URL names one.
                "KERNELHUB_VAR_DIR": str(self.var_dir),
                # DEBUG lets whitenoise serve static/ straight from the source tree (no collectstatic in tests).
                "DEBUG": "true",
                "PORT": str(self.port),
                "PYTHONUNBUFFERED": "1",
            }
        )
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "kernelhub.asgi:application", "--host", "127.0.0.1",
                 "--port", str(self.port), "--log-level", "warning", "--no-access-log"],
                cwd=REPO_ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT,
            )
        _wait_until_up(self)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-8000:]
        except OSError:
            return ""


def _wait_until_up(server: LiveServer) -> None:
    assert server.process is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    last_error = ""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"The live ASGI server exited with code {server.process.returncode} before serving. "
                f"Its log:\n{server.log()}"
            )
        try:
            # A static file: proves HTTP is served without touching the database.
            r = httpx.get(server.url + "/static/js/live.js", timeout=2)
            if r.status_code == 200:
                return
            last_error = f"HTTP {r.status_code}"
        except httpx.HTTPError as e:
            last_error = str(e)
        time.sleep(0.2)
    raise RuntimeError(
        f"The live ASGI server did not answer within {START_TIMEOUT_S:.0f} s (last: {last_error}). "
        f"Its log:\n{server.log()}"
    )


def new_live_server(django_db_blocker, port: int | None = None) -> LiveServer:
    """A server (not started) on this test run's database and var dir; start() and stop() it yourself."""
    from django.conf import settings
    from django.db import connections

    with django_db_blocker.unblock():
        database_url = database_url_for(connections["default"].settings_dict)
    return LiveServer(database_url=database_url, var_dir=Path(settings.VAR_DIR), port=port)


@pytest.fixture(scope="session")
def live_asgi_process(django_db_setup, django_db_blocker, embedded_redis) -> Iterator[LiveServer]:
    """One uvicorn subprocess for the whole test session (starting Django costs seconds)."""
    server = new_live_server(django_db_blocker)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def live_asgi_server(transactional_db, live_asgi_process: LiveServer) -> str:
    """The live server's base URL, e.g. http://127.0.0.1:40123 (no trailing slash)."""
    if not live_asgi_process.alive():
        pytest.fail(f"The live ASGI server has died. Its log:\n{live_asgi_process.log()}")
    return live_asgi_process.url


@pytest.fixture
def runner_process(live_asgi_server: str, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """`python -m gpu_runner serve` for a cpu runner (its Celery worker on pool.cpu runs the real evaluator),
    against the live server; stopped with SIGTERM. Its log is at `process.log_path`."""
    from apps.devices.services import pool_get_or_create, runner_create

    pool, _ = pool_get_or_create(slug="cpu")
    _runner, secret = runner_create(name="e2e-cpu", pool=pool)
    log_path = tmp_path / "runner.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "gpu_runner", "serve", "--site", live_asgi_server, "--token", secret,
         "--loglevel", "info", "--shutdown-grace", "5"],
        cwd=REPO_ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=log, stderr=subprocess.STDOUT,
    )
    process.log_path = log_path  # type: ignore[attr-defined]
    yield process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()
