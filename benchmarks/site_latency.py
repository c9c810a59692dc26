"""Latency of the problem and submission pages and of POST /api/v1/submissions/ under load.

Seeds PostgreSQL with N evaluations (default 100,000), serves the site with uvicorn (2 workers), and drives
it with locust (50 concurrent clients by default) for a fixed time; prints p50 and p95 per endpoint.
Target (issue 3): p95 under 100 ms at 50 concurrent clients on 2 cores.

Needs PostgreSQL and Redis (the bench database is created and dropped by the script):
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kernelhub_bench REDIS_URL=redis://127.0.0.1:6379/3 \
        .venv/bin/python benchmarks/site_latency.py [--evaluations 100000] [--users 50] [--seconds 60]
locust is an optional dependency: `.venv/bin/pip install -e '.[bench]'`.
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
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def seed(n_evaluations: int) -> dict:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.utils import timezone

    from apps.devices.models import HardwarePool
    from apps.submissions import services
    from apps.submissions.models import Entrant, Evaluation, Problem, Submission, sha256_text

    call_command("migrate", verbosity=0)
    pool, _ = HardwarePool.objects.get_or_create(slug="cpu", defaults={"name": "CPU", "kind": "cpu",
                                                                       "languages": ["cpp"], "device": "cpu"})
    for path in sorted((REPO / "problems" / "cpu").glob("level*/*.py")):
        services.problem_load_from_file(path=path, hardware=["cpu"])
    problems = list(Problem.objects.filter(pools=pool))
    tokens, entrants = [], []
    for i in range(50):
        name = f"bench-entrant-{i}"
        existing = Entrant.objects.filter(name=name).first()
        if existing:
            existing.tokens.all().delete()
            existing.delete() if not existing.submissions.exists() else None
        entrant, token = services.entrant_create(name=f"{name}-{int(time.time())}", kind="agent")
        entrants.append(entrant)
        tokens.append(token)
    example = (REPO / "examples" / "cpu" / "cpp").glob("*.py")
    source = next(iter(sorted(example))).read_text() + "\n# __UNIQUE__\n"
    now = timezone.now()
    batch = 5000
    first = None
    for start in range(0, n_evaluations, batch):
        subs = []
        for i in range(start, min(start + batch, n_evaluations)):
            problem = problems[i % len(problems)]
            text = source.replace("__UNIQUE__", str(i))
            subs.append(Submission(entrant=entrants[i % len(entrants)], problem=problem,
                                   problem_version=problem.versions.first(), pool=pool, language="cpp",
                                   source=text, sha256=sha256_text(text), created_at=now))
        subs = Submission.objects.bulk_create(subs)
        first = first or subs[0].pk
        Evaluation.objects.bulk_create([
            Evaluation(submission=s, status="done", stage="done", verdict="accepted", correct=True,
                       runtime_us=1000.0 + (s.pk % 97), eager_us=1500.0, compile_us=1200.0,
                       speedup_vs_eager=1.5, speedup_vs_compile=1.2, finished_at=now,
                       result={"verdict": "accepted", "stats": {"n": 100, "median_us": 1000.0}})
            for s in subs])
    last = Submission.objects.order_by("-pk").first().pk
    return {"problems": [p.slug for p in problems], "tokens": tokens, "first_submission": first,
            "last_submission": last, "source": source}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluations", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database for the benchmark (see the docstring).")
    os.environ.setdefault("SUBMISSIONS_PER_HOUR", "100000000")
    os.environ.setdefault("DEBUG", "false")
    t0 = time.time()
    data = seed(args.evaluations)
    print(f"seeded {args.evaluations} evaluations in {time.time() - t0:.0f} s", flush=True)

    env = {**os.environ, "KH_BENCH_SEED": json.dumps(data)}
    server = subprocess.Popen([str(BIN / "uvicorn"), "kernelhub.asgi:application", "--port", str(args.port),
                               "--workers", str(args.workers), "--no-access-log", "--log-level", "warning"],
                              cwd=REPO, env=env, start_new_session=True)
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{args.port}/problems/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        prefix = Path(tempfile.mkdtemp()) / "stats"
        subprocess.run([str(BIN / "locust"), "-f", str(REPO / "benchmarks" / "site_locustfile.py"), "--headless",
                        "-u", str(args.users), "-r", str(args.users), "-t", f"{args.seconds}s",
                        "-H", f"http://127.0.0.1:{args.port}", "--csv", str(prefix), "--only-summary"],
                       cwd=REPO, env=env, check=False)
        rows = {}
        with open(f"{prefix}_stats.csv") as f:
            for row in csv.DictReader(f):
                rows[f"{row['Type']} {row['Name']}".strip()] = {
                    "requests": int(row["Request Count"]), "failures": int(row["Failure Count"]),
                    "p50_ms": float(row["50%"]), "p95_ms": float(row["95%"]), "rps": float(row["Requests/s"])}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    report = {"benchmark": "site_latency", "evaluations": args.evaluations, "users": args.users,
              "seconds": args.seconds, "workers": args.workers, "nproc": os.cpu_count(),
              "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "endpoints": rows}
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
