"""Latency of the problem and submission pages and of POST /api/v1/submissions/ under load.

Seeds PostgreSQL with N evaluations (default 100,000), serves the site with uvicorn (2 workers), and drives
it with locust (50 concurrent clients by default) for a fixed time; prints requests/s, p50, p95 and p99 per
endpoint, the machine and its load average. Target (issue 3): p95 under 100 ms at 50 concurrent clients on 2 cores.

`--think-s` is what each client does between an answer and its next request:
    --think-s 0        a closed loop that never pauses (the default): the clients saturate the machine, and the
                       run measures its throughput ceiling and the queueing in front of it, not what one client
                       waits for a page on a site that is not saturated.
    --think-s 1        each client waits uniformly 0.5 to 1.5 s (a mean of 1 s): an agent polling its submission
                       every second or so, a person reading a page. "50 concurrent clients" in this reading.
    --think-s 0.2,0.4  any other uniform range, LOW,HIGH seconds.

Needs PostgreSQL and Redis; create the database first (`createdb -h 127.0.0.1 -U postgres kernelhub_bench`). A
database seeded by an earlier run is reused (only missing evaluations are added), so later runs start at once:
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kernelhub_bench REDIS_URL=redis://127.0.0.1:6379/3 \
        .venv/bin/python benchmarks/site_latency.py [--evaluations 100000] [--users 50] [--seconds 60]
locust is an optional dependency: `.venv/bin/pip install -e '.[bench]'` (or `--locust PATH` to a locust installed
elsewhere).

`--profile N` measures service time instead: N requests per endpoint, one at a time, in this process through
Django's test client (no server, no load generator, no queueing), with the queries and the CPU time each took.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


BENCH_ENTRANTS = 50


def think_range(text: str) -> tuple[float, float]:
    """--think-s: "MEAN" (uniform from MEAN/2 to 3*MEAN/2) or "LOW,HIGH", in seconds."""
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if len(values) == 1:
        values = [values[0] / 2, values[0] * 3 / 2]
    if len(values) != 2 or not 0 <= values[0] <= values[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: give a mean think time in seconds (0 for a closed loop, 1 "
                                         "for 0.5 to 1.5 s) or LOW,HIGH with 0 <= LOW <= HIGH.")
    return values[0], values[1]


def machine() -> str:
    """The CPU model and the number of cores the benchmark ran on (the load generator shares them)."""
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model or 'unknown CPU'}"


def uvicorn_options() -> list[str]:
    """The C event loop and HTTP parser where installed (uvicorn falls back to asyncio and h11 silently)."""
    import importlib.util

    options = []
    if importlib.util.find_spec("uvloop"):
        options += ["--loop", "uvloop"]
    if importlib.util.find_spec("httptools"):
        options += ["--http", "httptools"]
    return options


def setup_django() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
    import django

    django.setup()


def seed(n_evaluations: int) -> dict:
    """Problems, 50 entrants with a fresh token each, and n_evaluations done evaluations (only the missing ones:
    a database seeded by an earlier run is reused)."""
    setup_django()
    from django.core.management import call_command
    from django.utils import timezone

    from apps.devices.models import HardwarePool
    from apps.submissions import problems, services
    from apps.submissions.models import Entrant, Evaluation, Problem, Submission, sha256_text

    call_command("migrate", verbosity=0)
    pool, _ = HardwarePool.objects.get_or_create(slug="cpu", defaults={"name": "CPU", "kind": "cpu",
                                                                       "languages": ["cpp"], "device": "cpu"})
    for path in sorted((REPO / "problems" / "cpu").glob("level*/*.py")):
        problems.problem_load_from_file(path=path, hardware=["cpu"])
    problems = list(Problem.objects.filter(pools=pool))
    tokens, entrants = [], []
    for i in range(BENCH_ENTRANTS):
        entrant = Entrant.objects.filter(name=f"bench-entrant-{i}").first()
        if entrant is None:
            entrant, token = services.entrant_create(name=f"bench-entrant-{i}", kind="agent")
        else:
            _, token = services.api_token_create(entrant=entrant, label="site_latency benchmark")
        entrants.append(entrant)
        tokens.append(token)
    example = (REPO / "examples" / "cpu" / "cpp").glob("*.py")
    source = next(iter(sorted(example))).read_text() + "\n# __UNIQUE__\n"
    seeded = Evaluation.objects.filter(submission__entrant__in=entrants).count()
    # A history spread over 30 days, as on a site that rate-limits its entrants: the first runs of this benchmark
    # stamped all 100,000 "now", i.e. 2,000 evaluations per entrant within the rate limit's hour.
    now = timezone.now()
    history = timedelta(days=30)
    batch = 5000
    for start in range(seeded, n_evaluations, batch):
        subs = []
        for i in range(start, min(start + batch, n_evaluations)):
            problem = problems[i % len(problems)]
            text = source.replace("__UNIQUE__", str(i))
            created_at = now - history * (n_evaluations - i) / n_evaluations
            subs.append(Submission(entrant=entrants[i % len(entrants)], problem=problem,
                                   problem_version=problem.versions.first(), pool=pool, language="cpp",
                                   source=text, sha256=sha256_text(text), created_at=created_at))
        subs = Submission.objects.bulk_create(subs)
        Evaluation.objects.bulk_create([
            Evaluation(submission=s, entrant_id=s.entrant_id, status="done", stage="done", verdict="accepted",
                       correct=True,
                       runtime_us=1000.0 + (s.pk % 97), eager_us=1500.0, compile_us=1200.0,
                       speedup_vs_eager=1.5, speedup_vs_compile=1.2, queued_at=s.created_at,
                       finished_at=s.created_at + timedelta(minutes=1),
                       result={"verdict": "accepted", "stats": {"n": 100, "median_us": 1000.0}})
            for s in subs])
    ids = Submission.objects.filter(entrant__in=entrants).order_by("pk").values_list("pk", flat=True)
    return {"problems": [p.slug for p in problems], "tokens": tokens, "first_submission": ids.first(),
            "last_submission": ids.last(), "source": source}


def profile(data: dict, n: int) -> dict:
    """N single requests per endpoint, one after the other: wall and CPU time (this process) and queries."""
    import statistics
    import uuid

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    ids = list(range(data["first_submission"], data["last_submission"] + 1))
    requests = {
        "GET /problems/<slug>/": lambda i: client.get(f"/problems/{data['problems'][i % len(data['problems'])]}/"),
        "GET /submissions/<id>/": lambda i: client.get(f"/submissions/{ids[(i * 7919) % len(ids)]}/"),
        "POST /api/v1/submissions/": lambda i: client.post(
            "/api/v1/submissions/", content_type="application/json",
            data={"problem": data["problems"][i % len(data["problems"])], "hardware": "cpu",
                  "source": data["source"].replace("__UNIQUE__", uuid.uuid4().hex)},
            headers={"Authorization": f"Token {data['tokens'][i % len(data['tokens'])]}"}),
    }
    report = {}
    for name, send in requests.items():
        walls, cpus, queries = [], [], []
        for i in range(n + 3):
            with CaptureQueriesContext(connection) as captured:
                wall, cpu = time.perf_counter(), time.process_time()
                response = send(i)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if response.status_code >= 400:
                sys.exit(f"{name} answered {response.status_code}: {response.content[:300]!r}")
            if i >= 3:  # the first requests warm caches (templates, highlighted sources, the connection pool)
                walls.append(wall * 1000)
                cpus.append(cpu * 1000)
                queries.append(len(captured))
        walls.sort()
        report[name] = {"requests": n, "p50_ms": round(statistics.median(walls), 1),
                        "p95_ms": round(walls[int(0.95 * (n - 1))], 1),
                        "cpu_p50_ms": round(statistics.median(cpus), 1),
                        "queries": sorted(set(queries))}
    return report


def warm_up(data: dict, port: int, n: int = 40) -> None:
    """N requests of each kind, 8 at a time, before the measured run: every worker process opens its database
    connections, compiles its templates and imports what it loads lazily (pygments' lexer, the Celery app) before
    locust starts all its clients at once. The measured run is the steady state: a cold worker's first answers
    are a start-up cost, not latency under load."""
    from concurrent.futures import ThreadPoolExecutor

    base = f"http://127.0.0.1:{port}"
    ids = range(data["first_submission"], data["last_submission"] + 1)

    def one(i: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for response in (
                client.get(f"/problems/{data['problems'][i % len(data['problems'])]}/"),
                client.get(f"/submissions/{ids[(i * 7919) % len(ids)]}/"),
                client.post("/api/v1/submissions/",
                            json={"problem": data["problems"][i % len(data["problems"])], "hardware": "cpu",
                                  "source": data["source"].replace("__UNIQUE__", f"warm-{time.time_ns()}-{i}")},
                            headers={"Authorization": f"Token {data['tokens'][i % len(data['tokens'])]}"}),
            ):
                if response.status_code >= 400:
                    sys.exit(f"warm-up: {response.request.method} {response.request.url} answered "
                             f"{response.status_code}: {response.text[:300]}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(n)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluations", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--think-s", type=think_range, default=(0.0, 0.0), metavar="MEAN|LOW,HIGH",
                    help="each client's pause between an answer and its next request (see above); 0: closed loop")
    ap.add_argument("--out")
    ap.add_argument("--locust", default=str(BIN / "locust"), help="the locust executable")
    ap.add_argument("--profile", type=int, metavar="N", help="N single requests per endpoint, no load (see above)")
    args = ap.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database for the benchmark (see the docstring).")
    os.environ.setdefault("SUBMISSIONS_PER_HOUR", "100000000")
    os.environ.setdefault("DEBUG", "false")
    t0 = time.time()
    data = seed(args.evaluations)
    print(f"seeded {args.evaluations} evaluations in {time.time() - t0:.0f} s", flush=True)
    load_before = os.getloadavg()
    if args.profile:
        report = {"benchmark": "site_latency --profile", "evaluations": args.evaluations,
                  "db_pool": os.environ.get("DB_POOL", ""), "nproc": os.cpu_count(),
                  "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                  "endpoints": profile(data, args.profile),
                  "loadavg_1min_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)]}
        print(json.dumps(report, indent=2))
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2))
        return

    env = {**os.environ, "KH_BENCH_SEED": json.dumps(data), "KH_BENCH_THINK_S": "{},{}".format(*args.think_s)}
    server_options = ["--workers", str(args.workers), "--no-access-log", "--log-level", "warning",
                      *uvicorn_options()]
    server = subprocess.Popen([str(BIN / "uvicorn"), "kernelhub.asgi:application", "--port", str(args.port),
                               *server_options],
                              cwd=REPO, env=env, start_new_session=True)
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{args.port}/problems/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            sys.exit(f"The server did not answer 200 on http://127.0.0.1:{args.port}/problems/: see its log above; "
                     "if the port is taken, pass another with --port.")
        warm_up(data, args.port)
        prefix = Path(tempfile.mkdtemp()) / "stats"
        load_before = os.getloadavg()
        subprocess.run([args.locust, "-f", str(REPO / "benchmarks" / "site_locustfile.py"), "--headless",
                        "-u", str(args.users), "-r", str(args.users), "-t", f"{args.seconds}s",
                        "-H", f"http://127.0.0.1:{args.port}", "--csv", str(prefix), "--only-summary"],
                       cwd=REPO, env=env, check=False)
        rows = {}
        with open(f"{prefix}_stats.csv") as f:
            for row in csv.DictReader(f):
                rows[row["Name"]] = {
                    "requests": int(row["Request Count"]), "failures": int(row["Failure Count"]),
                    "rps": float(row["Requests/s"]), "p50_ms": float(row["50%"]), "p95_ms": float(row["95%"]),
                    "p99_ms": float(row["99%"])}
        load_after = os.getloadavg()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    report = {"benchmark": "site_latency", "evaluations": args.evaluations, "users": args.users,
              "think_s": list(args.think_s), "seconds": args.seconds, "server": " ".join(server_options),
              "db_pool": os.environ.get("DB_POOL", ""), "machine": machine(), "nproc": os.cpu_count(),
              "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "endpoints": rows,
              # The machine is shared: what else ran shows in its load. The 1-minute average after the run is
              # mostly the run's own minute (this benchmark's server, database and locust included).
              "loadavg_1min_before_after": [round(load_before[0], 1), round(load_after[0], 1)]}
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
