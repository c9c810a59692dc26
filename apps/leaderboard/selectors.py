"""Every leaderboard number comes from here: one reading of the stored evaluations, used by pages, API and plots.

KernelBench's conventions, as this site applies them:
- The suite of a pool is every active problem offered on that pool (optionally of one level). Rates are over
  the whole suite: an unattempted or failed problem counts as neither correct nor fast.
- An evaluation counts when it is final (status `done`) and is the latest done evaluation of its submission
  (a re-run replaces the earlier measurement, so re-running until a lucky timing does not pay), its submission
  is not moderated out (`hacked`/`invalid`) and its entrant is not banned.
- An entrant's best accepted result per problem is the one with the lowest runtime (ties: the earliest).
- fast_p = share of suite problems whose best result is correct with speedup > p (strictly); fast_0 is the
  correctness rate. Against eager and against torch.compile, each from the same best result.
- The geometric-mean speedup is over SOLVED problems only (as KernelBench-style papers report it); the number
  of problems it covers is returned beside it (`geomean_count_*`) and shown on every page.
- Baselines "PyTorch eager" and "torch.compile" are Entrant rows of kind `baseline`; their numbers come from
  the eager and torch.compile timings measured with the evaluations (the latest per problem). Eager is 1.0x
  eager by definition on every problem with a measured eager time; torch.compile is eager_us / compile_us.
  A baseline's rates are taken over the problems where it was measured (`problems` in its row), not over the
  whole suite: a problem nobody has submitted to yet is "not yet measured", never a baseline failure. The
  pages say over how many of the suite's problems each baseline was measured.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.functions import RowNumber

from apps.devices.models import HardwarePool
from apps.leaderboard.models import ModerationAction
from apps.submissions.models import Entrant, Evaluation, Problem, Submission

EAGER_SLUG = "pytorch-eager"
COMPILE_SLUG = "torch-compile"
BASELINES = {EAGER_SLUG: "PyTorch eager", COMPILE_SLUG: "torch.compile"}
BASELINE_OWNER_USERNAME = "kernelhub-baselines"
ROWS_CACHE_S = 300

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Best:
    """One entrant's best accepted result on one problem."""

    problem_id: int
    runtime_us: float
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    finished_at: datetime | None
    evaluation_id: int | None  # None for baselines
    submission_id: int | None


@dataclass
class EntrantBoard:
    entrant_id: int
    name: str
    slug: str
    kind: str
    is_baseline: bool
    attempted: int
    best: dict[int, Best] = field(default_factory=dict)
    # Baselines only: the problems with a measurement (their rates' denominator); None for entrants.
    measured: set[int] | None = None


@dataclass(frozen=True)
class SuiteProblem:
    id: int
    slug: str
    title: str
    level: int


@dataclass(frozen=True)
class Row:
    rank: int
    entrant: str
    entrant_slug: str
    kind: str
    is_baseline: bool
    problems: int
    attempted: int
    solved: int
    fast_0: float | None
    fast_1_vs_eager: float | None
    fast_1_vs_compile: float | None
    p: float
    fast_p_vs_eager: float | None
    fast_p_vs_compile: float | None
    geomean_speedup_vs_eager: float | None
    geomean_speedup_vs_compile: float | None
    geomean_count_vs_eager: int
    geomean_count_vs_compile: int
    last_result_at: datetime | None
    suite_size: int = 0  # every problem of the suite; `problems` is less for a baseline not measured everywhere


# --- helpers ------------------------------------------------------------------------------------------


def baseline_entrants() -> dict[str, Entrant]:
    """The two baseline entrants, created on first use (a flushed test database has none)."""
    found = {e.slug: e for e in Entrant.objects.filter(slug__in=BASELINES)}
    if len(found) < len(BASELINES):
        owner, _ = get_user_model().objects.get_or_create(
            username=BASELINE_OWNER_USERNAME, defaults={"is_active": False}
        )
        for slug, name in BASELINES.items():
            if slug not in found:
                found[slug], _ = Entrant.objects.get_or_create(
                    slug=slug,
                    defaults={"name": name, "kind": Entrant.KIND_BASELINE, "owner": owner,
                              "description": f"{name}, timed by the evaluator beside every submission."},
                )
    return found


def suite_problems(*, pool: str, level: int | None = None) -> dict[int, SuiteProblem]:
    qs = Problem.objects.filter(is_active=True, pools__slug=pool)
    if level is not None:
        qs = qs.filter(level=level)
    return {
        pid: SuiteProblem(id=pid, slug=slug, title=title, level=lvl)
        for pid, slug, title, lvl in qs.order_by("level", "slug").values_list("id", "slug", "title", "level")
    }


def counted_evaluations(*, pool: str, problem_ids: Any) -> QuerySet[Evaluation]:
    """Final evaluations that count for the rankings (see the module docstring)."""
    # "No newer done evaluation of the same submission": an anti-join on the submission_id index. (An
    # aggregate of the latest id per submission measured slower here, on SQLite and PostgreSQL alike.)
    newer_done = Evaluation.objects.filter(
        submission_id=OuterRef("submission_id"), status=Evaluation.STATUS_DONE, id__gt=OuterRef("id")
    )
    return (
        Evaluation.objects.filter(
            status=Evaluation.STATUS_DONE,
            submission__pool__slug=pool,
            submission__problem_id__in=problem_ids,
            submission__moderation=Submission.MODERATION_OK,
            submission__entrant__is_banned=False,
        )
        .exclude(submission__entrant__slug__in=BASELINES)
        .filter(~Exists(newer_done))
        .order_by()
    )


_ACCEPTED = Q(verdict="accepted", correct=True, runtime_us__gt=0)


def _accepted(qs: QuerySet[Evaluation]) -> QuerySet[Evaluation]:
    return qs.filter(_ACCEPTED)


def _best_per_entrant_problem(qs: QuerySet[Evaluation]) -> list[dict[str, Any]]:
    """One row per (entrant, problem) attempted: the accepted evaluation with the lowest runtime, or, where
    none was accepted, a failed one (`accepted` False): attempts and bests in one query."""
    # `entrant_pk`, not `entrant_id`: that is Evaluation's own copy of the entrant, which rows made by bulk_create
    # (benchmark seeds) may lack; the submission's is authoritative.
    ranked = qs.annotate(
        entrant_pk=F("submission__entrant_id"),
        problem_id=F("submission__problem_id"),
        accepted=Case(When(_ACCEPTED, then=Value(True)), default=Value(False), output_field=BooleanField()),
        place=Window(
            RowNumber(),
            partition_by=[F("submission__entrant_id"), F("submission__problem_id")],
            order_by=[F("accepted").desc(), F("runtime_us").asc(), F("id").asc()],
        ),
    )
    rows = ranked.filter(place=1).order_by().values(
        "id", "submission_id", "entrant_pk", "problem_id", "accepted", "runtime_us", "speedup_vs_eager",
        "speedup_vs_compile", "finished_at",
    )
    return [dict(row) for row in rows]


def _baseline_measurements(*, pool: str, problem_ids: Any) -> dict[int, tuple[float, float | None, datetime | None]]:
    """problem id -> (eager_us, compile_us, when): the latest measurement on this pool."""
    latest = (
        Evaluation.objects.filter(
            status=Evaluation.STATUS_DONE,
            submission__pool__slug=pool,
            submission__problem_id__in=problem_ids,
            submission__moderation=Submission.MODERATION_OK,
            submission__entrant__is_banned=False,
            eager_us__gt=0,
        )
        .order_by()
        .values("submission__problem_id")
        .annotate(last=Max("id"))
        .values("last")
    )
    rows = Evaluation.objects.filter(id__in=Subquery(latest)).order_by().values_list(
        "submission__problem_id", "eager_us", "compile_us", "finished_at")
    # eager_us__gt=0 above already leaves out a missing eager time; the test says so to the type checker too.
    return {pid: (eager, comp if comp and comp > 0 else None, when) for pid, eager, comp, when in rows
            if eager is not None}


def _baseline_boards(
    measurements: dict[int, tuple[float, float | None, datetime | None]], baselines: dict[str, Entrant]
) -> list[EntrantBoard]:
    eager, comp = baselines[EAGER_SLUG], baselines[COMPILE_SLUG]
    eager_board = EntrantBoard(eager.id, eager.name, eager.slug, eager.kind, True, attempted=len(measurements),
                               measured=set(measurements))
    compile_board = EntrantBoard(comp.id, comp.name, comp.slug, comp.kind, True, attempted=0, measured=set())
    for pid, (eager_us, compile_us, when) in measurements.items():
        eager_board.best[pid] = Best(pid, eager_us, 1.0, compile_us / eager_us if compile_us else None, when,
                                     None, None)
        if compile_us:
            compile_board.attempted += 1
            compile_board.measured.add(pid)  # type: ignore[union-attr]
            compile_board.best[pid] = Best(pid, compile_us, eager_us / compile_us, 1.0, when, None, None)
    return [eager_board, compile_board]


def board_data(
    *, pool: str, level: int | None = None, suite: dict[int, SuiteProblem] | None = None
) -> tuple[dict[int, SuiteProblem], list[EntrantBoard]]:
    """The suite and, per entrant on the board (baselines first), its best result per problem."""
    if suite is None:
        suite = suite_problems(pool=pool, level=level)
    suite_ids = list(suite)
    counted = counted_evaluations(pool=pool, problem_ids=suite_ids)

    attempted: dict[int, int] = defaultdict(int)
    best_by_entrant: dict[int, dict[int, Best]] = defaultdict(dict)
    for r in _best_per_entrant_problem(counted):
        attempted[r["entrant_pk"]] += 1
        if r["accepted"]:
            best_by_entrant[r["entrant_pk"]][r["problem_id"]] = Best(
                r["problem_id"], r["runtime_us"], r["speedup_vs_eager"], r["speedup_vs_compile"],
                r["finished_at"], r["id"], r["submission_id"],
            )
    entrants = Entrant.objects.filter(id__in=list(attempted)).values_list("id", "name", "slug", "kind")
    boards = _baseline_boards(_baseline_measurements(pool=pool, problem_ids=suite_ids), baseline_entrants())
    for eid, name, slug, kind in entrants:
        boards.append(EntrantBoard(eid, name, slug, kind, False, attempted[eid], best_by_entrant.get(eid, {})))
    return suite, boards


def _rate(count: int, total: int) -> float | None:
    return count / total if total else None


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def rate_denominator(board: EntrantBoard, total: int) -> int:
    """The suite's size for an entrant; for a baseline, the problems where it was measured."""
    return total if board.measured is None else len(board.measured)


def fast_p(board: EntrantBoard, total: int, p: float, vs: str) -> float | None:
    total = rate_denominator(board, total)
    attr = "speedup_vs_eager" if vs == "eager" else "speedup_vs_compile"
    fast = sum(1 for b in board.best.values() if (s := getattr(b, attr)) is not None and s > p)
    return _rate(fast, total)


def row_for(board: EntrantBoard, total: int, p: float = 1.0) -> dict[str, Any]:
    eager = [b.speedup_vs_eager for b in board.best.values() if b.speedup_vs_eager and b.speedup_vs_eager > 0]
    comp = [b.speedup_vs_compile for b in board.best.values() if b.speedup_vs_compile and b.speedup_vs_compile > 0]
    times = [b.finished_at for b in board.best.values() if b.finished_at]
    suite_size, total = total, rate_denominator(board, total)
    return {
        "entrant": board.name,
        "entrant_slug": board.slug,
        "kind": board.kind,
        "is_baseline": board.is_baseline,
        "problems": total,
        "attempted": board.attempted,
        "solved": len(board.best),
        "fast_0": _rate(len(board.best), total),
        "fast_1_vs_eager": fast_p(board, total, 1.0, "eager"),
        "fast_1_vs_compile": fast_p(board, total, 1.0, "compile"),
        "p": p,
        "fast_p_vs_eager": fast_p(board, total, p, "eager"),
        "fast_p_vs_compile": fast_p(board, total, p, "compile"),
        "geomean_speedup_vs_eager": _geomean(eager),
        "geomean_speedup_vs_compile": _geomean(comp),
        "geomean_count_vs_eager": len(eager),
        "geomean_count_vs_compile": len(comp),
        "last_result_at": max(times) if times else None,
        "suite_size": suite_size,
    }


def _rank_key(row: dict[str, Any]) -> tuple[float, ...]:
    def v(x: float | None) -> float:
        return -1.0 if x is None else x

    return (v(row["fast_p_vs_eager"]), v(row["fast_p_vs_compile"]), v(row["fast_0"]),
            v(row["geomean_speedup_vs_eager"]))


# --- the selectors ------------------------------------------------------------------------------------


def leaderboard_rows(*, pool: str, level: int | None = None, p: float = 1.0) -> list[Row]:
    """One row per entrant with a counted result on the pool's suite, plus the two baselines, ranked.

    Ranked by fast_p vs eager, then fast_p vs torch.compile, fast_0 and the geometric mean; equal keys share
    a rank (1, 1, 3). Rates are fractions in [0, 1], None when the suite is empty.
    """
    suite = suite_problems(pool=pool, level=level)
    # Every open board re-fetches its rows when a result lands: the ranking is cached under a signature of
    # everything it depends on, so N viewers cost one computation and N cheap signature reads.
    key = f"leaderboard:rows:{pool}:{level}:{p!r}:{board_signature(pool=pool, suite_ids=list(suite))}"
    rows = cache_get(key)
    if rows is None:
        suite, boards = board_data(pool=pool, level=level, suite=suite)
        rows = rank_rows(suite=suite, boards=boards, p=p)
        cache_set(key, rows)
    return rows


def board_signature(*, pool: str, suite_ids: list[int]) -> str:
    """Changes whenever the rows could: a result lands or is deleted, a submission or entrant is moderated
    (always through services.py, which logs it), the suite changes. Renames show within ROWS_CACHE_S."""
    done = Evaluation.objects.filter(status=Evaluation.STATUS_DONE, submission__pool__slug=pool).aggregate(
        n=Count("id"), last=Max("id"), at=Max("finished_at"))
    moderated = ModerationAction.objects.aggregate(last=Max("id"))["last"]
    state = repr((sorted(suite_ids), done["n"], done["last"], done["at"], moderated))
    return hashlib.sha256(state.encode()).hexdigest()[:24]


def cache_get(key: str) -> Any:
    try:
        return cache.get(key)
    except Exception as e:  # the cache is an optimisation: without Redis, compute
        logger.warning("Leaderboard cache unavailable (%s); computing.", e)
        return None


def cache_set(key: str, value: Any) -> None:
    try:
        cache.set(key, value, ROWS_CACHE_S)
    except Exception as e:
        logger.warning("Leaderboard cache unavailable (%s); not cached.", e)


def rank_rows(*, suite: dict[int, SuiteProblem], boards: list[EntrantBoard], p: float = 1.0) -> list[Row]:
    """leaderboard_rows on data already read with board_data (pages draw several views of one reading)."""
    rows = [row_for(b, len(suite), p) for b in boards]
    # Places are over the whole suite for everyone: a baseline's rates are over the problems where it was
    # measured, but a problem it was not measured on is not won, so that it does not climb by being measured
    # on few problems.
    keys = {id(r): _rank_key(row_for(replace(b, measured=None), len(suite), p)) if b.is_baseline else _rank_key(r)
            for r, b in zip(rows, boards, strict=True)}
    # Best first; among equals the baselines first, then by name.
    rows.sort(key=lambda r: (tuple(-x for x in keys[id(r)]), not r["is_baseline"], r["entrant"].lower()))
    ranked: list[Row] = []
    for i, r in enumerate(rows):
        rank = ranked[-1].rank if ranked and keys[id(r)] == keys[id(rows[i - 1])] else i + 1
        ranked.append(Row(rank=rank, **r))
    return ranked


def fast_p_curve(
    *, pool: str, level: int | None = None, vs: str = "eager", ps: list[float] | None = None
) -> tuple[list[float], list[dict[str, Any]]]:
    """fast_p against p for every entrant on the board: (ps, [{entrant, slug, kind, values}])."""
    suite, boards = board_data(pool=pool, level=level)
    return curves_from(suite=suite, boards=boards, vs=vs, ps=ps)


def curves_from(
    *, suite: dict[int, SuiteProblem], boards: list[EntrantBoard], vs: str, ps: list[float] | None = None
) -> tuple[list[float], list[dict[str, Any]]]:
    if ps is None:
        attr = "speedup_vs_eager" if vs == "eager" else "speedup_vs_compile"
        top = max((getattr(b, attr) or 0.0 for board in boards for b in board.best.values()), default=0.0)
        p_max = min(max(2.0, top * 1.05), 20.0)
        ps = [round(p_max * i / 200, 4) for i in range(201)]
    curves = [
        {"entrant": b.name, "slug": b.slug, "kind": b.kind, "values": [fast_p(b, len(suite), p, vs) for p in ps]}
        for b in boards
    ]
    return ps, curves


def speedups_by_level(*, pool: str) -> list[dict[str, Any]]:
    """Each entrant's best speedups (vs eager and vs torch.compile) with the problem's level, for distributions."""
    suite, boards = board_data(pool=pool)
    return speedups_from(suite=suite, boards=boards)


def speedups_from(*, suite: dict[int, SuiteProblem], boards: list[EntrantBoard]) -> list[dict[str, Any]]:
    return [
        {
            "entrant": board.name, "slug": board.slug, "kind": board.kind,
            "points": [
                {"level": suite[pid].level, "problem": suite[pid].slug, "speedup_vs_eager": b.speedup_vs_eager,
                 "speedup_vs_compile": b.speedup_vs_compile}
                for pid, b in sorted(board.best.items())
            ],
        }
        for board in boards
    ]


def progress_series(
    *, pool: str, level: int | None = None, entrant_slug: str | None = None
) -> list[dict[str, Any]]:
    """How each entrant's board position grew: after every accepted result (in time order) the number of
    problems solved, how many beat eager, and the geometric mean of its best speedups vs eager so far."""
    suite = suite_problems(pool=pool, level=level)
    qs = _accepted(counted_evaluations(pool=pool, problem_ids=list(suite)))
    if entrant_slug is not None:
        qs = qs.filter(submission__entrant__slug=entrant_slug)
    rows = qs.order_by("finished_at", "id").values_list(
        "submission__entrant__name", "submission__entrant__slug", "submission__entrant__kind",
        "submission__problem_id", "runtime_us", "speedup_vs_eager", "finished_at",
    )
    state: dict[str, dict[str, Any]] = {}
    for name, slug, kind, pid, runtime, speedup, when in rows:
        s = state.get(slug)
        if s is None:
            s = state[slug] = {"entrant": name, "slug": slug, "kind": kind, "points": [],
                               "best": {}, "log_sum": 0.0, "logs": 0, "fast": 0}
        previous = s["best"].get(pid)
        if previous is not None and previous[0] <= runtime:
            continue  # not an improvement: the board did not change
        # Running sums, updated by the difference: one pass over the results, however many problems.
        for (sign, sp) in ((-1, previous[1] if previous else None), (1, speedup)):
            if sp and sp > 0:
                s["log_sum"] += sign * math.log(sp)
                s["logs"] += sign
                s["fast"] += sign * (sp > 1.0)
        s["best"][pid] = (runtime, speedup)
        s["points"].append({
            "at": when,
            "solved": len(s["best"]),
            "fast_1_vs_eager": s["fast"],
            "geomean_speedup_vs_eager": math.exp(s["log_sum"] / s["logs"]) if s["logs"] else None,
        })
    return [{k: s[k] for k in ("entrant", "slug", "kind", "points")} for s in state.values()]


def problem_board(*, slug: str, pool: str) -> list[dict[str, Any]]:
    """The best accepted entry per entrant on one problem, ranked by runtime, with the baselines placed
    among them (rank None). Raises Problem.DoesNotExist when the problem is not active on this pool."""
    problem = Problem.objects.get(slug=slug, is_active=True, pools__slug=pool)
    counted = counted_evaluations(pool=pool, problem_ids=[problem.id])
    best = [r for r in _best_per_entrant_problem(counted) if r["accepted"]]
    entrants = {
        e["id"]: e
        for e in Entrant.objects.filter(id__in=[r["entrant_pk"] for r in best]).values(
            "id", "name", "slug", "kind", "sources_public"
        )
    }
    submissions = dict(
        Submission.objects.filter(id__in=[r["submission_id"] for r in best]).values_list("id", "language")
    )
    entries: list[dict[str, Any]] = []
    for r in best:
        e = entrants[r["entrant_pk"]]
        entries.append({
            "entrant": e["name"], "entrant_slug": e["slug"], "kind": e["kind"], "is_baseline": False,
            "sources_public": e["sources_public"], "submission_id": r["submission_id"], "evaluation_id": r["id"],
            "language": submissions.get(r["submission_id"], ""), "runtime_us": r["runtime_us"],
            "speedup_vs_eager": r["speedup_vs_eager"], "speedup_vs_compile": r["speedup_vs_compile"],
            "finished_at": r["finished_at"],
        })
    for board in _baseline_boards(_baseline_measurements(pool=pool, problem_ids=[problem.id]), baseline_entrants()):
        b = board.best.get(problem.id)
        if b is not None:
            entries.append({
                "entrant": board.name, "entrant_slug": board.slug, "kind": board.kind, "is_baseline": True,
                "sources_public": False, "submission_id": None, "evaluation_id": None, "language": "",
                "runtime_us": b.runtime_us, "speedup_vs_eager": b.speedup_vs_eager,
                "speedup_vs_compile": b.speedup_vs_compile, "finished_at": b.finished_at,
            })
    entries.sort(key=lambda x: (x["runtime_us"], x["is_baseline"], x["evaluation_id"] or 0))
    rank, previous_runtime, place = 0, None, 0
    for entry in entries:
        if entry["is_baseline"]:
            entry["rank"] = None
            continue
        place += 1
        if entry["runtime_us"] != previous_runtime:
            rank = place
        previous_runtime = entry["runtime_us"]
        entry["rank"] = rank
    return entries


def entrant_history(*, entrant_slug: str, pool: str, limit: int = 500) -> list[dict[str, Any]]:
    """The entrant's final evaluations on the pool, newest first, moderated ones included (and marked)."""
    rows = (
        Evaluation.objects.filter(
            submission__entrant__slug=entrant_slug, submission__pool__slug=pool, status=Evaluation.STATUS_DONE
        )
        .order_by("-finished_at", "-id")
        .values(
            "id", "submission_id", "verdict", "correct", "runtime_us", "speedup_vs_eager", "speedup_vs_compile",
            "finished_at", "submission__problem__slug", "submission__problem__title", "submission__problem__level",
            "submission__moderation", "submission__moderation_reason", "submission__language",
        )[:limit]
    )
    return [dict(row) for row in rows]


def head_to_head(*, pool: str, a: str, b: str, level: int | None = None) -> dict[str, Any]:
    """Two entrants (slugs; baselines allowed) problem by problem. Raises LookupError naming the one missing."""
    suite, boards = board_data(pool=pool, level=level)
    by_slug = {board.slug: board for board in boards}
    for slug in (a, b):
        if slug not in by_slug:
            raise LookupError(slug)
    board_a, board_b = by_slug[a], by_slug[b]
    problems, wins_a, wins_b, ties = [], 0, 0, 0
    for pid, sp in suite.items():
        ba, bb = board_a.best.get(pid), board_b.best.get(pid)
        if ba is None and bb is None:
            winner = None
        elif bb is None or (ba is not None and ba.runtime_us < bb.runtime_us):
            winner = "a"
        elif ba is None or bb.runtime_us < ba.runtime_us:
            winner = "b"
        else:
            winner = "tie"
        wins_a += winner == "a"
        wins_b += winner == "b"
        ties += winner == "tie"
        problems.append({"problem": sp, "a": ba, "b": bb, "winner": winner})
    return {
        "a": row_for(board_a, len(suite)), "b": row_for(board_b, len(suite)), "problems": problems,
        "wins_a": wins_a, "wins_b": wins_b, "ties": ties,
    }


def pool_slugs() -> list[str]:
    return list(HardwarePool.objects.filter(is_active=True).values_list("slug", flat=True))


def problem_levels(*, pool: str) -> list[int]:
    return sorted(set(Problem.objects.filter(is_active=True, pools__slug=pool).values_list("level", flat=True)))

