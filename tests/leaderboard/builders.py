"""Small builders for hand-computed leaderboard fixtures: real rows in the test database, nothing faked."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.devices.models import HardwarePool
from apps.submissions.models import Entrant, Evaluation, Problem, ProblemVersion, Submission, sha256_text

T0 = timezone.now() - timedelta(days=10)


def make_pool(slug: str = "h200") -> HardwarePool:
    pool, _ = HardwarePool.objects.get_or_create(
        slug=slug, defaults={"name": slug.upper(), "kind": "gpu", "device": "cuda", "languages": ["cuda"]}
    )
    return pool


def make_problem(slug: str, *, level: int = 1, pools: tuple[HardwarePool, ...] = (), active: bool = True) -> Problem:
    source = f"# problem {slug}\n"
    problem = Problem.objects.create(
        slug=slug, title=slug.replace("-", " ").title(), level=level, source=source,
        content_hash=sha256_text(source), is_active=active,
    )
    ProblemVersion.objects.create(problem=problem, version=1, source=source, content_hash=problem.content_hash)
    problem.pools.set(pools)
    return problem


def make_entrant(name: str, kind: str = "agent") -> Entrant:
    owner, _ = get_user_model().objects.get_or_create(username=f"owner-{name.lower().replace(' ', '-')}")
    return Entrant.objects.create(name=name, slug=name.lower().replace(" ", "-").replace(".", ""), kind=kind,
                                  owner=owner)


_counter = {"n": 0}


def make_submission(entrant: Entrant, problem: Problem, pool: HardwarePool, *, moderation: str = "ok") -> Submission:
    _counter["n"] += 1
    source = f"# solution {_counter['n']}\n"
    version, _ = ProblemVersion.objects.get_or_create(
        problem=problem, version=problem.version,
        defaults={"source": problem.source, "content_hash": problem.content_hash},
    )
    return Submission.objects.create(
        entrant=entrant, problem=problem, problem_version=version, pool=pool,
        language="cuda", source=source, sha256=sha256_text(source), moderation=moderation,
    )


def add_evaluation(
    submission: Submission,
    *,
    verdict: str = "accepted",
    runtime_us: float | None = None,
    eager_us: float | None = 100.0,
    compile_us: float | None = 100.0,
    minutes: int = 0,
    status: str = "done",
) -> Evaluation:
    accepted = verdict == "accepted"
    when = T0 + timedelta(minutes=minutes or _counter["n"])
    return Evaluation.objects.create(
        submission=submission, status=status, stage="done" if status == "done" else "queued",
        verdict=verdict if status == "done" else "", correct=accepted if status == "done" else None,
        runtime_us=runtime_us if accepted else None, eager_us=eager_us, compile_us=compile_us,
        speedup_vs_eager=eager_us / runtime_us if accepted and runtime_us and eager_us else None,
        speedup_vs_compile=compile_us / runtime_us if accepted and runtime_us and compile_us else None,
        finished_at=when if status == "done" else None,
    )


def result(entrant: Entrant, problem: Problem, pool: HardwarePool, *, moderation: str = "ok", **kwargs) -> Evaluation:
    """One submission with one final evaluation."""
    return add_evaluation(make_submission(entrant, problem, pool, moderation=moderation), **kwargs)
