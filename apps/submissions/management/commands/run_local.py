"""`manage.py run_local` (what `make run` calls): the whole site on one machine, on the embedded default.

It starts the embedded Redis (unless REDIS_URL names a server), migrates, creates the pools (cpu always, and
one named after the GPU model where a GPU is found; without a GPU, `h200` with no runner, so that the GPU problems
are listed and their submissions wait in its queue), loads problems/, creates a local runner per pool that this
machine runs, submits examples/ to those as "KernelHub examples", then starts and supervises: uvicorn (HTTP and
websockets), the site's Celery worker with beat (the sweeper), and `python -m gpu_runner serve` per local runner.
Ctrl-C or SIGTERM stops them all.
Running it again is safe: every step is idempotent.

The site runs with DEBUG off unless the environment says DEBUG=true. Its processes die with it, even on SIGKILL,
and a start beside a live run on the same var/ is refused, while one after a run that died stops what it left
(kernelhub/local_processes.py, the state file var/run_local.json).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.devices.models import HardwarePool, Runner
from apps.devices.services import pool_get_or_create, runner_create, runner_rotate_secret
from apps.submissions.management.commands.load_problems import problem_files
from apps.submissions.models import Problem
from apps.submissions.problems import ProblemError, problem_load_from_file, problem_slug_from_path
from apps.submissions.services import SubmissionError, entrant_get_or_create_for_examples, submission_create
from kernelhub import local_processes

# Marketing words and memory/form-factor suffixes that do not name the GPU model.
_GPU_NAME_NOISE = {"nvidia", "geforce", "tesla", "quadro", "pcie", "sxm", "sxm4", "sxm5", "hbm2", "hbm2e", "hbm3",
                   "hbm3e", "nvl"}


# Without a GPU here, the GPU problems are offered on the pool of the GPU the project's runners use.
GPU_POOL_WITHOUT_GPU, GPU_POOL_WITHOUT_GPU_NAME = "h200", "NVIDIA H200"


def gpu_pool_slug(gpu_name: str) -> str:
    """`NVIDIA H200` -> `h200`, `NVIDIA A100-SXM4-80GB` -> `a100`, `NVIDIA GeForce RTX 4090` -> `rtx-4090`."""
    words = [w for w in re.split(r"[\s_-]+", gpu_name.lower()) if w and w not in _GPU_NAME_NOISE
             and not re.fullmatch(r"\d+gb", w)]
    if not words:
        return "gpu"
    if words[0] in ("rtx", "gtx") and len(words) > 1:
        return f"{words[0]}-{words[1]}"
    return re.sub(r"[^a-z0-9-]", "", words[0]) or "gpu"


def detect_gpu_name() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        if pynvml.nvmlDeviceGetCount() > 0:
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
            return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 - no driver or no NVML: ask torch
        pass
    try:
        import torch

        if torch.cuda.is_available():
            return str(torch.cuda.get_device_name(0))
    except Exception:  # noqa: BLE001
        pass
    return None


class Command(BaseCommand):
    help = "Run the whole site locally: web server, site worker with the sweeper, and a runner per local pool."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
        parser.add_argument("--no-examples", action="store_true", help="Do not submit examples/.")
        parser.add_argument("--setup-only", action="store_true",
                            help="Prepare the database, pools, problems and examples, then exit.")

    def handle(self, *args: object, port: int, no_examples: bool, setup_only: bool, **options: object) -> None:
        state_file = local_processes.state_path(Path(settings.VAR_DIR))
        self.clear_earlier_run(state_file)
        guard = None
        if not setup_only:
            self.state: dict[str, Any] = {"supervisor": local_processes.record("supervisor", os.getpid()),
                                          "processes": [], "descendants": []}
            local_processes.write_state(state_file, self.state)
            # Started first: from here on, whatever this process starts is stopped if it dies.
            guard = subprocess.Popen([sys.executable, "-m", "kernelhub.local_processes", "guard", str(state_file),
                                      str(os.getpid())], cwd=settings.BASE_DIR, start_new_session=True,
                                     preexec_fn=local_processes.die_with_parent(os.getpid()))
            self.state["guard"] = local_processes.record("guard", guard.pid)
            local_processes.write_state(state_file, self.state)
        redis_server = None
        try:
            if not settings.REDIS_URL:
                from kernelhub import embedded_redis

                socket_path = Path(settings.EMBEDDED_REDIS_SOCKET)
                # One already up on this var dir (a test run's) is used, never stopped.
                if not embedded_redis.is_up(socket_path):
                    redis_server = embedded_redis.start(socket_path)
                    if guard is not None and getattr(redis_server, "pid", None):
                        self.state["redis"] = local_processes.record("embedded Redis", int(redis_server.pid))
                        local_processes.write_state(state_file, self.state)
                self.stdout.write(f"Embedded Redis on {socket_path}")
            call_command("migrate", interactive=False, verbosity=0)
            pools, pools_without_runner = self.set_up_pools()
            self.load_problems(pools + pools_without_runner)
            secrets = self.set_up_runners(pools)
            if not no_examples:
                self.submit_examples(pools)
            if setup_only:
                return
            self.serve(port=port, runner_secrets=secrets, state_file=state_file)
        finally:
            if redis_server is not None:
                redis_server.shutdown()
            if guard is not None:
                guard.terminate()  # this process is alive: the guard stands down
                guard.wait(timeout=10)
                state = local_processes.read_state(state_file)
                if state is not None and int(state["supervisor"]["pid"]) == os.getpid():
                    state_file.unlink()

    def clear_earlier_run(self, state_file: Path) -> None:
        """Refuses to run beside a live run_local on this var dir; stops what a dead one left running."""
        state = local_processes.read_state(state_file)
        if state is None:
            return
        supervisor = state["supervisor"]
        if local_processes.alive(supervisor) and int(supervisor["pid"]) != os.getpid():
            raise CommandError(
                f"Another `make run` (manage.py run_local, pid {supervisor['pid']}) is running on {settings.VAR_DIR}. "
                f"Stop it first (Ctrl-C in its terminal, or `kill {supervisor['pid']}`), or give this one another "
                "var directory (KERNELHUB_VAR_DIR=...).")
        stopped = local_processes.stop_stack(state)
        if stopped:
            names = ", ".join(f"{e['name']} (pid {e['pid']})" for e in stopped)
            self.stdout.write(self.style.WARNING(
                f"An earlier run_local (pid {supervisor['pid']}) ended without stopping its processes; stopped "
                f"what it left running: {names}."))
        state_file.unlink(missing_ok=True)

    # --- Set-up -------------------------------------------------------------------------------------------

    def set_up_pools(self) -> tuple[list[HardwarePool], list[HardwarePool]]:
        """The pools this machine runs (each gets a local runner), and those it only lists: without a GPU, the
        GPU problems still go to the `h200` pool, whose submissions wait in its queue until a runner joins
        (`create_runner --pool h200` on a GPU host); the pages and the sweeper treat it as a pool waiting for
        a runner."""
        pools = [pool_get_or_create(slug="cpu", name="CPU")[0]]
        gpu_name = detect_gpu_name()
        if gpu_name:
            pool, created = pool_get_or_create(slug=gpu_pool_slug(gpu_name), name=gpu_name)
            pools.append(pool)
            self.stdout.write(f"GPU found: {gpu_name} -> pool {pool.slug}{' (new)' if created else ''}")
            return pools, []
        waiting, _created = pool_get_or_create(slug=GPU_POOL_WITHOUT_GPU, name=GPU_POOL_WITHOUT_GPU_NAME)
        self.stdout.write(f"No GPU found: a runner for the cpu pool only. The GPU problems are listed on pool "
                          f"{waiting.slug}, whose submissions wait until a runner joins it (docs/RUNNERS.md).")
        return pools, [waiting]

    def load_problems(self, pools: list[HardwarePool]) -> None:
        root = Path(settings.BASE_DIR) / "problems"
        tracks = [("cpu", ["cpu"])]
        gpu_pools = [p.slug for p in pools if p.kind == HardwarePool.KIND_GPU]
        if gpu_pools:
            tracks.append(("gpu", gpu_pools))
        counts = {"created": 0, "updated": 0, "unchanged": 0}
        for folder, hardware in tracks:
            if not (root / folder).is_dir():
                continue
            for path in problem_files([str(root / folder)]):
                try:
                    _problem, outcome = problem_load_from_file(path=path, hardware=hardware)
                except ProblemError as e:
                    self.stderr.write(f"Skipped {path}: {e}")
                    continue
                counts[outcome] += 1
        self.stdout.write(f"Problems: {counts['created']} created, {counts['updated']} updated, "
                          f"{counts['unchanged']} unchanged.")

    def set_up_runners(self, pools: list[HardwarePool]) -> dict[str, str]:
        """A local runner per pool; its secret is rotated at every start (it lives only in this process)."""
        secrets = {}
        for pool in pools:
            runner = Runner.objects.filter(name=f"local-{pool.slug}").first()
            if runner is None:
                runner, secret = runner_create(name=f"local-{pool.slug}", pool=pool)
            else:
                secret = runner_rotate_secret(runner=runner)
            secrets[pool.slug] = secret
        return secrets

    def submit_examples(self, pools: list[HardwarePool]) -> None:
        root = Path(settings.BASE_DIR) / "examples"
        entrant = entrant_get_or_create_for_examples()
        gpu_pools = [p.slug for p in pools if p.kind == HardwarePool.KIND_GPU]
        sets = [(root / "cpu" / "cpp", "cpp", "cpu")]
        for pool_slug in gpu_pools:
            sets += [(root / "gpu" / language, language, pool_slug) for language in ("cuda", "triton", "cupy")]
        created = existing = 0
        for folder, language, pool_slug in sets:
            if not folder.is_dir():
                continue
            for path in sorted(folder.glob("*.py")):
                slug = problem_slug_from_path(path)
                if not Problem.objects.filter(slug=slug).exists():
                    self.stderr.write(f"Skipped example {path}: no problem {slug}.")
                    continue
                try:
                    _submission, _evaluation, new = submission_create(
                        entrant=entrant, problem_slug=slug, source=path.read_text(), language=language,
                        hardware=pool_slug)
                except SubmissionError as e:
                    self.stderr.write(f"Skipped example {path}: {e.message}")
                    continue
                created += new
                existing += not new
        self.stdout.write(f"Examples: {created} submitted, {existing} already there.")

    # --- The processes -------------------------------------------------------------------------------------

    def serve(self, *, port: int, runner_secrets: dict[str, str], state_file: Path) -> None:
        site_url = f"http://127.0.0.1:{port}"
        # DEBUG off unless asked for (DEBUG=true): the debug pages list every route and show settings.
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="kernelhub.settings", KERNELHUB_VAR_DIR=str(settings.VAR_DIR),
                   PORT=str(port), SITE_URL=site_url, PYTHONUNBUFFERED="1", DEBUG=os.environ.get("DEBUG") or "false")
        python = sys.executable
        commands: list[tuple[str, list[str], dict[str, str]]] = [
            ("web", [python, "-m", "uvicorn", "kernelhub.asgi:application", "--host", "127.0.0.1",
                     "--port", str(port)], {}),
            ("site-worker", [python, "-m", "celery", "-A", "kernelhub", "worker", "-Q", "site", "-c", "1",
                             "-B", "-s", str(Path(settings.VAR_DIR) / "celerybeat-schedule"),
                             "--without-gossip", "--without-mingle", "-n", "site@%h", "-l", "info"], {}),
            # ANE submissions are validated and converted to Core ML (minutes, coremltools) by a worker of their
            # own, never the site's (settings.ANE_PREPARE_QUEUE).
            ("ane-prepare-worker", [python, "-m", "celery", "-A", "kernelhub", "worker", "-Q",
                                    settings.ANE_PREPARE_QUEUE, "-c", "1", "--without-gossip", "--without-mingle",
                                    "-n", "ane-prepare@%h", "-l", "info"], {}),
        ]
        for pool_slug, secret in runner_secrets.items():
            # The secret goes through the environment, not argv: other local users can read argv.
            commands.append((f"runner-{pool_slug}", [python, "-m", "gpu_runner", "serve", "--site", site_url,
                                                     "--shutdown-grace", "10"],
                             {"KERNELHUB_RUNNER_TOKEN": secret}))
        processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        stopping = threading.Event()

        def on_signal(signum: int, frame: Any) -> None:
            stopping.set()

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        try:
            for name, argv, extra_env in commands:
                # Own session: Ctrl-C reaches this supervisor only, which then stops each child in order. The
                # parent-death signal: killed with SIGKILL, this supervisor still takes each child along.
                process = subprocess.Popen(argv, cwd=settings.BASE_DIR, env=env | extra_env, start_new_session=True,
                                           preexec_fn=local_processes.die_with_parent(os.getpid()))
                processes.append((name, process))
                self.state["processes"].append({**local_processes.record(name, process.pid), "group": True})
                local_processes.write_state(state_file, self.state)
            self.stdout.write(self.style.SUCCESS(f"KernelHub is starting on {site_url} (Ctrl-C stops it)."))
            next_snapshot = 0.0
            while not stopping.is_set():
                for name, process in processes:
                    if process.poll() is not None:
                        self.stderr.write(f"{name} exited with code {process.returncode}: stopping everything.")
                        stopping.set()
                if time.monotonic() >= next_snapshot:
                    # What runs below the children now (the runner's sandboxed processes have sessions of their
                    # own): a start after this process died without its guard still finds them.
                    next_snapshot = time.monotonic() + 10
                    self.state["descendants"] = local_processes.descendants([p.pid for _n, p in processes])
                    local_processes.write_state(state_file, self.state)
                stopping.wait(1.0)
        finally:
            self.stdout.write("Stopping...")
            for _name, process in reversed(processes):
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 30
            for name, process in reversed(processes):
                try:
                    process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    self.stderr.write(f"{name} did not stop in time: killed.")
                    process.kill()
                    process.wait()
        if any(process.returncode not in (0, -signal.SIGTERM) for _n, process in processes):
            raise CommandError("A process of the local site failed; its output is above.")
