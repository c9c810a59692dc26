"""Times the leaderboard selector on a synthetic database of N evaluations (default 100,000).

    .venv/bin/python benchmarks/leaderboard_selector.py [--evaluations N] [--database-url URL]

Without --database-url it uses a fresh SQLite file in a temporary directory; with a PostgreSQL URL it
creates the tables there (use a database of its own: its tables are flushed first). The rows are synthetic
(random speedups) and exist only to measure how the queries scale; they never reach a real board.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=100_000)
    parser.add_argument("--problems", type=int, default=250)
    parser.add_argument("--entrants", type=int, default=200)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    os.environ["KERNELHUB_VAR_DIR"] = tempfile.mkdtemp(prefix="kernelhub-bench-")
    # Always an embedded Redis of its own: the benchmark clears the cache between timings.
    os.environ.pop("REDIS_URL", None)
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from apps.devices.models import HardwarePool
    from apps.leaderboard import selectors
    from apps.submissions.models import Entrant, Evaluation, Problem, ProblemVersion, Submission
    from kernelhub import embedded_redis

    redis_server = embedded_redis.start(Path(settings.EMBEDDED_REDIS_SOCKET))  # noqa: F841 (kept alive)
    call_command("migrate", verbosity=0)
    if args.database_url:
        call_command("flush", interactive=False, verbosity=0)

    rng = random.Random(0)
    started = time.perf_counter()
    with transaction.atomic():
        pool = HardwarePool.objects.create(slug="h200", name="H200", kind="gpu", device="cuda", languages=["cuda"])
        owner = get_user_model().objects.create(username="bench")
        problems = Problem.objects.bulk_create(
            Problem(slug=f"p{i}", title=f"P{i}", level=1 + i % 3, source="#", content_hash="0")
            for i in range(args.problems))
        pool.problems.set(problems)
        versions = ProblemVersion.objects.bulk_create(
            ProblemVersion(problem=p, version=1, source="#", content_hash="0") for p in problems)
        entrants = Entrant.objects.bulk_create(
            Entrant(name=f"E{i}", slug=f"e{i}", kind="agent", owner=owner) for i in range(args.entrants))
        # Two evaluations per submission on average a quarter of the time (re-runs), the rest one.
        n_subs = int(args.evaluations / 1.25)
        now = timezone.now()
        subs = Submission.objects.bulk_create(
            (Submission(entrant=entrants[rng.randrange(len(entrants))], problem=problems[k := rng.randrange(len(problems))],
                        problem_version=versions[k], pool=pool, language="cuda", source="#", sha256=str(i))
             for i in range(n_subs)), batch_size=5000)
        evals = []
        for i in range(args.evaluations):
            sub = subs[i % n_subs]
            accepted = rng.random() < 0.7
            eager, compile_ = rng.uniform(500, 5000), rng.uniform(400, 5000)
            runtime = eager / rng.lognormvariate(0.2, 0.5) if accepted else None
            evals.append(Evaluation(
                submission=sub, status="done", stage="done", verdict="accepted" if accepted else "wrong_answer",
                correct=accepted, runtime_us=runtime, eager_us=eager, compile_us=compile_,
                speedup_vs_eager=eager / runtime if runtime else None,
                speedup_vs_compile=compile_ / runtime if runtime else None, finished_at=now))
        Evaluation.objects.bulk_create(evals, batch_size=5000)
    if connection.vendor == "postgresql":
        # Fresh statistics, as autovacuum would have them: planning on an "empty" table picks nested loops.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"built {args.evaluations} evaluations ({n_subs} submissions, {args.entrants} entrants, "
          f"{args.problems} problems) in {time.perf_counter() - started:.1f} s on {connection.vendor}")

    def timed(label: str, fn) -> None:  # type: ignore[no-untyped-def]
        fn()  # warm
        times = []
        for _ in range(args.repeat):
            with CaptureQueriesContext(connection) as ctx:
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
        print(f"{label:<52} median {1000 * statistics.median(times):8.1f} ms  "
              f"(min {1000 * min(times):.1f}, {len(ctx.captured_queries)} queries)")

    from django.core.cache import cache

    def uncached(**kwargs):  # type: ignore[no-untyped-def]
        cache.clear()
        return selectors.leaderboard_rows(pool="h200", **kwargs)

    try:
        cache.clear()
        has_cache = True
    except Exception:
        has_cache = False
        print("(no Redis for the cache: every leaderboard_rows call computes)")
    timed("leaderboard_rows(pool), computed", uncached)
    timed("leaderboard_rows(pool, level=2, p=1.5), computed", lambda: uncached(level=2, p=1.5))
    if has_cache:
        timed("leaderboard_rows(pool), cached", lambda: selectors.leaderboard_rows(pool="h200"))
    timed("board_data(pool) (pages: read once per view)", lambda: selectors.board_data(pool="h200"))
    timed("problem_board(slug, pool)", lambda: selectors.problem_board(slug="p7", pool="h200"))
    timed("progress_series(pool)", lambda: selectors.progress_series(pool="h200"))


if __name__ == "__main__":
    main()
