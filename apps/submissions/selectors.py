"""Reads: problems, submissions and who may see a submission's source."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.utils import timezone

from apps.submissions.models import Entrant, Evaluation, Problem, Submission

# Parts of an evaluator result that can quote the solution's source (compiler output, logs).
# `validation`: the ANE validator's report on a solution that never reached a Mac describes its graph op by op.
# `solution_hash`: the SHA-256 of the source would let anyone confirm a guess of a private source.
SOURCE_REVEALING_KEYS = ("log", "compile_log", "build_log", "stderr", "stdout", "validation", "solution_hash")


def problem_list(*, pool: str | None = None, level: int | None = None) -> QuerySet[Problem]:
    problems = Problem.objects.filter(is_active=True).prefetch_related("pools")
    if pool:
        problems = problems.filter(pools__slug=pool)
    if level is not None:
        problems = problems.filter(level=level)
    return problems.order_by("level", "slug").distinct()


def _solved(problem: Any, pool: str | None = None) -> Exists:
    """For an entrant (OuterRef("pk")): an accepted, unmoderated submission of `problem` (a Problem or an
    OuterRef), on `pool` if given. One index probe per entrant (submission_dedup, evaluation_verdict_submission),
    which stops at the first such submission."""
    accepted = Submission.objects.filter(entrant=OuterRef("pk"), problem=problem,
                                         moderation=Submission.MODERATION_OK, evaluations__verdict="accepted")
    if pool:
        accepted = accepted.filter(pool__slug=pool)
    return Exists(accepted)


def problem_solved_by_column(*, pool: str | None = None) -> Subquery:
    """Entrants in good standing that solved the problem (on `pool` if given), as an annotation of a Problem
    queryset.

    A COUNT(DISTINCT entrant) over every submission of the problem took 60-160 ms for 4,000 submissions of one
    problem (EXPLAIN ANALYZE: 157 ms); an EXISTS per entrant, 5 ms.
    """
    solvers = (Entrant.objects.filter(is_banned=False).filter(_solved(OuterRef(OuterRef("pk")), pool)).order_by()
               .values(n=Func(F("pk"), function="COUNT")))
    return Subquery(solvers, output_field=IntegerField())


def problem_get(*, slug: str) -> Problem | None:
    return Problem.objects.filter(slug=slug, is_active=True).prefetch_related("pools").first()


def submission_get(*, submission_id: int) -> Submission | None:
    return (Submission.objects.select_related("entrant", "problem", "pool", "problem_version")
            .filter(pk=submission_id).first())


def submission_latest_evaluation(*, submission: Submission) -> Evaluation | None:
    return submission.evaluations.select_related("runner").order_by("-queued_at", "-pk").first()


def submission_list_for_user(*, user: Any, entrant_id: int | None = None, limit: int = 100) -> QuerySet[Submission]:
    submissions = Submission.objects.select_related("entrant", "problem", "pool").filter(entrant__owner=user)
    if entrant_id is not None:
        submissions = submissions.filter(entrant_id=entrant_id)
    return submissions.order_by("-created_at")[:limit]


def submission_source_visible(*, submission: Submission, user: Any) -> bool:
    """Private to its owner (and staff) until the entrant publishes or the problem's reveal date passes."""
    if user is not None and user.is_authenticated and (user.is_staff or user.pk == submission.entrant.owner_id):
        return True
    if submission.entrant.sources_public:
        return True
    reveal_at = submission.problem.reveal_at
    return reveal_at is not None and reveal_at <= timezone.now()


# Messages that cannot quote the solution: a wrong answer's mismatch (index, expected, got), a timeout. The
# others can (compiler output, tracebacks, the anti-cheat's evidence): the owner's until the source is public.
MESSAGE_PUBLIC_VERDICTS = ("", "accepted", "wrong_answer", "timeout")


def evaluation_message_visible(*, evaluation: Evaluation, source_visible: bool) -> bool:
    return source_visible or evaluation.verdict in MESSAGE_PUBLIC_VERDICTS


def evaluation_public_result(*, evaluation: Evaluation, source_visible: bool) -> dict[str, Any]:
    """The evaluator's object as is for those who may see the source; without its logs for others."""
    result = dict(evaluation.result or {})
    if source_visible:
        return result
    for key in SOURCE_REVEALING_KEYS:
        result.pop(key, None)
    if not evaluation_message_visible(evaluation=evaluation, source_visible=False):
        result.pop("message", None)
    return result


# How many of a pool's latest evaluations the wait estimate is taken from.
QUEUE_ESTIMATE_SAMPLE = 20


def evaluation_queue_estimate(*, evaluation: Evaluation) -> dict[str, Any] | None:
    """Where a queued evaluation stands in its pool's queue, and a rough wait; None unless it is queued.

    position: queued evaluations of the pool queued before it, plus one. ahead: those plus the pool's running
    evaluations. wait_s = ahead x the median run time (started to finished) of the pool's last
    QUEUE_ESTIMATE_SAMPLE finished evaluations / the runners online (heartbeat within RUNNER_OFFLINE_AFTER_S,
    not disabled, not draining); None where the pool has no finished evaluation yet or no runner online.
    Rough by nature: run times differ by problem and by whether a build is cached.
    """
    from datetime import timedelta
    from statistics import median

    from django.conf import settings

    from apps.devices.models import Runner

    if evaluation.status != Evaluation.STATUS_QUEUED:
        return None
    pool_id = Submission.objects.filter(pk=evaluation.submission_id).values_list("pool_id", flat=True).first()
    in_pool = Evaluation.objects.filter(submission__pool_id=pool_id)
    queued_before = in_pool.filter(status=Evaluation.STATUS_QUEUED, queued_at__lt=evaluation.queued_at).count()
    running = in_pool.filter(status=Evaluation.STATUS_RUNNING).count()
    recent = list(
        in_pool.filter(status=Evaluation.STATUS_DONE, started_at__isnull=False, finished_at__isnull=False)
        .order_by("-finished_at").values_list("started_at", "finished_at")[:QUEUE_ESTIMATE_SAMPLE]
    )
    durations = [(f - s).total_seconds() for s, f in recent if s is not None and f is not None and f >= s]
    online_since = timezone.now() - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)
    runners = Runner.objects.filter(pool_id=pool_id, is_disabled=False, is_draining=False,
                                    last_heartbeat_at__gte=online_since).count()
    typical = median(durations) if durations else None
    ahead = queued_before + running
    return {
        "position": queued_before + 1,
        "ahead": ahead,
        "running": running,
        "runners": runners,
        "typical_s": typical,
        "sample": len(durations),
        "wait_s": ahead * typical / runners if typical is not None and runners else None,
    }
