"""`manage.py run_local` (what `make run` runs) in a subprocess, on its own var dir and a free port, for the
process tests. Only the standard library and httpx: tests/ must import without Django."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
# Migrating a fresh SQLite file and loading problems/ on a busy 2-core machine, then starting every process.
READY_TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalStack:
    def __init__(self, var_dir: Path, port: int, *, env: dict[str, str] | None = None) -> None:
        self.var_dir, self.port = var_dir, port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = var_dir / f"run_local-{time.monotonic_ns()}.log"
        self.extra_env = env or {}
        self.process: subprocess.Popen | None = None

    def start(self) -> LocalStack:
        self.var_dir.mkdir(parents=True, exist_ok=True)
        # Its own SQLite file and embedded Redis under var_dir, whatever the test run uses (CI's PostgreSQL).
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DEBUG")}
        env.update({"KERNELHUB_VAR_DIR": str(self.var_dir), "PYTHONUNBUFFERED": "1",
                    "KERNELHUB_CALIBRATE_EVERY_S": "-1", "DJANGO_SETTINGS_MODULE": "kernelhub.settings"})
        env.update(self.extra_env)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "run_local", "--no-examples", "--port", str(self.port)],
                cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def log(self, tail: int | None = 6000) -> str:
        """The stack's output: its last `tail` characters (for a failure's message), or all of it (tail=None, for
        a line printed at its start, which the workers' banners soon push out of any tail)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text if tail is None else text[-tail:]

    def wait_ready(self) -> None:
        """The web server answers and the runner's Celery worker runs (every process of the stack started)."""
        assert self.process is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"run_local exited with {self.process.returncode}:\n{self.log()}"
            try:
                web = httpx.get(self.url + "/static/js/live.js", timeout=2).status_code == 200
            except httpx.HTTPError:
                web = False
            commands = [cmd for _pid, cmd in tree(self.process.pid)]
            if web and any("gpu_runner.worker" in c for c in commands) and any("-A kernelhub" in c for c in commands):
                return
            time.sleep(1)
        raise AssertionError(f"run_local was not ready in {READY_TIMEOUT_S} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def tree(root: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live process below `root`, in any session."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))):
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = ""
            out.append((child, cmd))
    return out


def running(pid: int, start: str | None) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and fields[19] == start


def snapshot(root: int) -> list[tuple[int, str | None, str]]:
    """Every process below `root` with its start time, so that a recycled pid is not taken for it later."""
    return [(pid, (_stat(pid) or [None] * 20)[19], cmd) for pid, cmd in tree(root)]


def wait_gone(processes: list[tuple[int, str | None, str]], timeout_s: float) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = [(pid, cmd) for pid, start, cmd in processes if running(pid, start)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.25)
