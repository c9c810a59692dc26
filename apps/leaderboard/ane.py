"""The ANE board of a `<chip>-ane` pool: every number read from results that Mac runners reported.

The same counting rules as the GPU boards (selectors.py: the latest done evaluation of a submission, not
moderated out, entrant not banned; an entrant's best accepted result per problem is its lowest runtime),
but other columns: the Neural Engine's baseline is Core ML's default conversion of the reference model,
timed on the same Mac (`coreml_us`, compute units ALL, and `coreml_cpu_us`, CPU only), not PyTorch.

Columns come from the runner's result object (docs/ANE.md, "Result object"): `speedup_vs_coreml`,
`speedup_vs_coreml_cpu`, `tflops`, `tflops_per_watt` (only where powermetrics ran), and
`placement.ane_op_share` / `placement.ane_cost_share`. A value that is missing, not a finite number, or a
share outside [0, 1] is shown as unmeasured, never guessed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.leaderboard import selectors
from apps.submissions.models import Entrant


@dataclass(frozen=True)
class AneEntry:
    """One entrant's best accepted result on one problem."""

    problem_slug: str
    problem_title: str
    entrant: str
    entrant_slug: str
    kind: str
    submission_id: int
    runtime_us: float
    coreml_us: float | None
    coreml_cpu_us: float | None
    speedup_vs_coreml: float | None
    speedup_vs_coreml_cpu: float | None
    tflops: float | None
    tflops_per_watt: float | None
    ane_op_share: float | None
    ane_cost_share: float | None
    chip: str
    finished_at: datetime | None


@dataclass(frozen=True)
class AneRow:
    rank: int
    entrant: str
    entrant_slug: str
    kind: str
    problems: int
    solved: int
    geomean_speedup_vs_coreml: float | None
    geomean_count: int
    mean_tflops: float | None
    mean_ane_cost_share: float | None
    last_result_at: datetime | None


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _share(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        return None
    return float(value)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def ane_board(*, pool: str) -> dict[str, Any]:
    """{suite_size, rows (ranked entrants), problems: [{problem, entries best first}]} for one ANE pool.

    Ranked by problems solved, then by the geometric-mean speedup over Core ML's default (over the solved
    problems that have one; their number is `geomean_count`).
    """
    suite = selectors.suite_problems(pool=pool)
    key = f"leaderboard:ane:{pool}:{selectors.board_signature(pool=pool, suite_ids=list(suite))}"
    cached = selectors.cache_get(key)
    if cached is not None:
        return cached
    accepted = selectors.counted_evaluations(pool=pool, problem_ids=list(suite)).filter(selectors._ACCEPTED)
    best: dict[tuple[int, int], dict[str, Any]] = {}
    for r in accepted.values("id", "submission_id", "submission__entrant_id", "submission__problem_id",
                             "runtime_us", "result", "finished_at"):
        k = (r["submission__entrant_id"], r["submission__problem_id"])
        if k not in best or (r["runtime_us"], r["id"]) < (best[k]["runtime_us"], best[k]["id"]):
            best[k] = dict(r)
    entrants = {e.pk: e for e in Entrant.objects.filter(id__in={eid for eid, _ in best})}

    by_problem: dict[int, list[AneEntry]] = defaultdict(list)
    by_entrant: dict[int, list[AneEntry]] = defaultdict(list)
    for (eid, pid), row in best.items():
        result: dict[str, Any] = row["result"] if isinstance(row["result"], dict) else {}
        placement: dict[str, Any] = result["placement"] if isinstance(result.get("placement"), dict) else {}
        system: dict[str, Any] = result["system"] if isinstance(result.get("system"), dict) else {}
        entrant, problem = entrants[eid], suite[pid]
        entry = AneEntry(
            problem_slug=problem.slug, problem_title=problem.title, entrant=entrant.name,
            entrant_slug=entrant.slug, kind=entrant.kind, submission_id=row["submission_id"],
            runtime_us=row["runtime_us"], coreml_us=_positive(result.get("coreml_us")),
            coreml_cpu_us=_positive(result.get("coreml_cpu_us")),
            speedup_vs_coreml=_positive(result.get("speedup_vs_coreml")),
            speedup_vs_coreml_cpu=_positive(result.get("speedup_vs_coreml_cpu")),
            tflops=_positive(result.get("tflops")), tflops_per_watt=_positive(result.get("tflops_per_watt")),
            ane_op_share=_share(placement.get("ane_op_share")),
            ane_cost_share=_share(placement.get("ane_cost_share")),
            chip=str(system.get("chip") or ""), finished_at=row["finished_at"],
        )
        by_problem[pid].append(entry)
        by_entrant[eid].append(entry)

    summaries: list[dict[str, Any]] = []
    for eid, entries in by_entrant.items():
        speedups = [e.speedup_vs_coreml for e in entries if e.speedup_vs_coreml is not None]
        summaries.append({
            "entrant": entrants[eid].name, "entrant_slug": entrants[eid].slug, "kind": entrants[eid].kind,
            "problems": len(suite), "solved": len(entries),
            "geomean_speedup_vs_coreml": math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None,
            "geomean_count": len(speedups),
            "mean_tflops": _mean([e.tflops for e in entries if e.tflops is not None]),
            "mean_ane_cost_share": _mean([e.ane_cost_share for e in entries if e.ane_cost_share is not None]),
            "last_result_at": max((e.finished_at for e in entries if e.finished_at), default=None),
        })

    def rank_key(s: dict[str, Any]) -> tuple[int, float]:
        return (s["solved"], s["geomean_speedup_vs_coreml"] or 0.0)

    summaries.sort(key=lambda s: (tuple(-x for x in rank_key(s)), s["entrant"].lower()))
    rows: list[AneRow] = []
    for i, s in enumerate(summaries):
        rank = rows[-1].rank if rows and rank_key(s) == rank_key(summaries[i - 1]) else i + 1
        rows.append(AneRow(rank=rank, **s))
    problems = [{"problem": sp, "entries": sorted(by_problem.get(pid, []), key=lambda e: e.runtime_us)}
                for pid, sp in suite.items()]
    data = {"suite_size": len(suite), "rows": rows, "problems": problems}
    selectors.cache_set(key, data)
    return data
