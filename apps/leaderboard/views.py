"""The leaderboard pages. Every number comes from selectors.py; figures from plots.py."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from apps.devices.models import HardwarePool
from apps.leaderboard import ane, plots, selectors
from apps.leaderboard.reported import reported_table
from apps.leaderboard.services import entrant_ban, submission_moderate
from apps.submissions.models import Entrant, Evaluation, Problem, Submission


class BadParameter(Exception):
    pass


def home(request: HttpRequest) -> HttpResponse:
    """The race at a glance: who leads each pool, agents vs LLMs vs torch.compile, the newest verified
    results; the problems one click away."""
    online_since = timezone.now() - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)
    pools = []
    for pool in HardwarePool.objects.filter(is_active=True, problems__is_active=True).distinct().order_by("slug"):
        if pool.kind == HardwarePool.KIND_ANE:
            continue  # the Neural Engine board ranks other numbers: linked, not summarised here
        rows = selectors.leaderboard_rows(pool=pool.slug)
        entrants = [r for r in rows if not r.is_baseline]
        best_of_kind: dict[str, selectors.Row] = {}
        for r in entrants:  # rows are ranked: the first of a kind is its best
            best_of_kind.setdefault(r.kind, r)
        pools.append({
            "pool": pool, "suite_size": rows[0].suite_size if rows else 0, "leader": entrants[0] if entrants else None,
            "kinds": [best_of_kind[k] for k in ("agent", "llm", "human") if k in best_of_kind],
            "compile": next((r for r in rows if r.entrant_slug == selectors.COMPILE_SLUG), None),
            "runners_online": pool.runners.filter(is_disabled=False, last_heartbeat_at__gte=online_since).count(),
        })
    newest = (Evaluation.objects.filter(status=Evaluation.STATUS_DONE, verdict="accepted",
                                        submission__moderation=Submission.MODERATION_OK,
                                        submission__entrant__is_banned=False)
              .exclude(submission__entrant__kind=Entrant.KIND_BASELINE)
              .select_related("submission__entrant", "submission__problem", "submission__pool")
              .order_by("-finished_at", "-pk")[:8])
    return render(request, "submissions/home.html", {
        "pools": pools, "newest": newest,
        "problem_count": Problem.objects.filter(is_active=True).count(),
    })


def _pool(slug: str) -> HardwarePool:
    return get_object_or_404(HardwarePool, slug=slug, is_active=True)


def _pools() -> list[HardwarePool]:
    return list(HardwarePool.objects.filter(is_active=True))


def _level(request: HttpRequest) -> int | None:
    raw = request.GET.get("level", "")
    if raw in ("", "all"):
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= 9:
        raise BadParameter(f"Level '{raw}' is not a level: use 1, 2 or 3, or pick a tab.")
    return int(raw)


def _p(request: HttpRequest) -> float:
    raw = request.GET.get("p", "")
    if raw == "":
        return 1.0
    try:
        p = float(raw)
    except ValueError:
        raise BadParameter(f"p '{raw}' is not a number: use a speedup threshold such as 1.0 or 1.5.") from None
    if not math.isfinite(p) or not 0 <= p <= 1000:
        raise BadParameter(f"p must be between 0 and 1000, not {raw}.")
    return p


def _bad_parameter(request: HttpRequest, error: BadParameter, url: str) -> HttpResponse:
    messages.error(request, str(error))
    return redirect(url)


def leaderboard_home(request: HttpRequest) -> HttpResponse:
    pools = _pools()
    if not pools:
        return render(request, "leaderboard/no_pools.html")
    default = next((p for p in pools if p.slug == settings.DEFAULT_HARDWARE_POOL), pools[0])
    return redirect("leaderboard:board", pool=default.slug)


def _board_page_data(pool: str, level: int | None, p: float) -> dict[str, Any]:
    suite, boards = selectors.board_data(pool=pool, level=level)
    rows = selectors.rank_rows(suite=suite, boards=boards, p=p)
    ps, curves_eager = selectors.curves_from(suite=suite, boards=boards, vs="eager")
    ps_c, curves_compile = selectors.curves_from(suite=suite, boards=boards, vs="compile")
    entrants = [b for b in boards if not b.is_baseline]
    by_slug = {b.slug: b for b in boards}
    eager, comp = by_slug[selectors.EAGER_SLUG], by_slug[selectors.COMPILE_SLUG]
    problems = []
    for sp in suite.values():
        solvers = [(b.name, b.best[sp.id]) for b in entrants if sp.id in b.best]
        fastest = min(solvers, key=lambda x: x[1].runtime_us, default=None)
        eager_best, compile_best = eager.best.get(sp.id), comp.best.get(sp.id)
        speedup = fastest[1].speedup_vs_eager if fastest else None
        problems.append({
            "problem": sp, "solvers": len(solvers), "fastest": fastest,
            "eager_us": eager_best.runtime_us if eager_best else None,
            "compile_us": compile_best.runtime_us if compile_best else None,
            # The best verified kernel is no faster than eager: say so rather than crown it.
            "beats_eager": speedup is not None and speedup > 1.0,
            "beats_compile": bool(fastest and compile_best and fastest[1].runtime_us < compile_best.runtime_us),
        })
    baselines_measured = {b.slug.replace("-", "_"): len(b.measured or ()) for b in (eager, comp)}
    colours = plots.colours_for([r.entrant_slug for r in rows])
    figures = {
        "fastp_eager": plots.fast_p_figure(ps, curves_eager, vs="eager", colours=colours),
        "fastp_compile": plots.fast_p_figure(ps_c, curves_compile, vs="compile", colours=colours),
        "distribution": plots.speedup_distribution_figure(
            selectors.speedups_from(suite=suite, boards=boards), colours=colours),
        "progress": plots.progress_figure(selectors.progress_series(pool=pool, level=level), colours=colours),
    }
    return {"rows": rows, "suite_size": len(suite), "problems": problems, "figures": figures,
            "baselines_measured": baselines_measured,
            "unmeasured": [p["problem"] for p in problems if p["eager_us"] is None]}


def board(request: HttpRequest, pool: str) -> HttpResponse:
    hw = _pool(pool)
    if hw.kind == HardwarePool.KIND_ANE:
        # Other columns: speedup over Core ML's default conversion, TFLOPS, work placed on the Neural Engine.
        return render(request, "leaderboard/ane_board.html", {
            "pool": hw, "pools": _pools(), **ane.ane_board(pool=hw.slug),
            "runners": hw.runners.filter(is_disabled=False).count(),
            "ws_path": f"/ws/leaderboard/{hw.slug}/",
            "api_url": reverse("api-ane-leaderboard") + f"?hardware={hw.slug}",
        })
    try:
        level, p = _level(request), _p(request)
    except BadParameter as e:
        return _bad_parameter(request, e, reverse("leaderboard:board", args=[hw.slug]))
    # The heavy part (every number and figure) is cached under the data's signature, like the API's rows.
    suite_ids = list(selectors.suite_problems(pool=hw.slug, level=level))
    key = f"leaderboard:page:{hw.slug}:{level}:{p!r}:{selectors.board_signature(pool=hw.slug, suite_ids=suite_ids)}"
    data = selectors.cache_get(key)
    if data is None:
        data = _board_page_data(hw.slug, level, p)
        selectors.cache_set(key, data)
    query = {"hardware": hw.slug, **({"level": level} if level else {}), **({"p": p} if p != 1.0 else {})}
    api_url = reverse("api-leaderboard") + "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return render(request, "leaderboard/board.html", {
        "pool": hw, "pools": _pools(), "level": level, "levels": selectors.problem_levels(pool=hw.slug),
        "p": p, "show_p": p != 1.0, **data, "api_url": api_url, "ws_path": f"/ws/leaderboard/{hw.slug}/",
        # Best first, so the form opens on the top two.
        "compare_choices": [(r.entrant_slug, r.entrant) for r in data["rows"]],
    })


def problem_board(request: HttpRequest, pool: str, slug: str) -> HttpResponse:
    hw = _pool(pool)
    problem = get_object_or_404(Problem, slug=slug, is_active=True, pools=hw)
    entries = selectors.problem_board(slug=problem.slug, pool=hw.slug)
    # Links to code where its owner, the reveal date or the viewer's role allows (the submission page
    # enforces the same rule; here it only decides whether a link is worth showing).
    revealed = problem.reveal_at is not None and problem.reveal_at <= timezone.now()
    user = request.user
    owned = set()
    if user.is_authenticated:
        owned = set(Entrant.objects.filter(owner=user).values_list("slug", flat=True))
    for e in entries:
        e["code_visible"] = bool(e["submission_id"]) and (
            revealed or e["sources_public"] or user.is_staff or e["entrant_slug"] in owned
        )
    figure = plots.runtime_bars_figure(entries, f"{problem.title}: best runtime per entrant")
    return render(request, "leaderboard/problem.html", {
        "pool": hw, "problem": problem, "entries": entries, "figure": figure,
        "has_entries": any(not e["is_baseline"] for e in entries),
        "ws_path": f"/ws/leaderboard/{hw.slug}/",
        "moderation_choices": [c for c in Submission.MODERATION_CHOICES if c[0] != Submission.MODERATION_OK],
    })


def entrant_page(request: HttpRequest, pool: str, slug: str) -> HttpResponse:
    hw = _pool(pool)
    suite, boards = selectors.board_data(pool=hw.slug)  # first: it creates the baseline entrants if missing
    entrant = get_object_or_404(Entrant, slug=slug)
    board = next((b for b in boards if b.slug == entrant.slug), None)
    row = selectors.row_for(board, len(suite)) if board else None
    solved: list[dict[str, Any]] = []
    if board:
        ordered = sorted(board.best.items(), key=lambda item: (suite[item[0]].level, suite[item[0]].slug))
        solved = [{"problem": suite[pid], "best": best} for pid, best in ordered]
    series = selectors.progress_series(pool=hw.slug, entrant_slug=entrant.slug)
    trend = plots.entrant_trend_figure(series[0]["points"] if series else [], entrant.name)
    history = [] if entrant.kind == Entrant.KIND_BASELINE else selectors.entrant_history(
        entrant_slug=entrant.slug, pool=hw.slug, limit=200)
    return render(request, "leaderboard/entrant.html", {
        "pool": hw, "pools": _pools(), "entrant": entrant, "row": row, "solved": solved, "history": history,
        "trend": trend, "suite_size": len(suite),
        # As on the submission page: a moderation reason is for the owner and staff.
        "can_see_reasons": request.user.is_authenticated and (
            request.user.is_staff or request.user.pk == entrant.owner_id),
        "compare_choices": [(b.slug, b.name) for b in boards if b.slug != entrant.slug],
    })


def compare(request: HttpRequest, pool: str) -> HttpResponse:
    hw = _pool(pool)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    suite, boards = selectors.board_data(pool=hw.slug)
    choices = [(x.slug, x.name) for x in boards]
    context: dict[str, Any] = {"pool": hw, "choices": choices, "a": a, "b": b, "result": None}
    if a and b:
        if a == b:
            context["error"] = "Pick two different entrants."
        else:
            try:
                result = selectors.head_to_head(pool=hw.slug, a=a, b=b)
            except LookupError as e:
                context["error"] = (f"'{e.args[0]}' has no counted result on {hw.slug}: pick an entrant from the "
                                    "list.")
            else:
                context["result"] = result
                context["figure"] = plots.head_to_head_figure(result)
    return render(request, "leaderboard/compare.html", context)


# KernelBench's own name for each column of the reported table, and the selector field it compares to.
REPORTED_COLUMNS = [
    ("pass_rate", "fast_0", "Correct"),
    ("faster_than_eager_rate", "fast_1_vs_eager", "Faster than eager"),
    ("faster_than_compile_rate", "fast_1_vs_compile", "Faster than compile"),
    ("geomean_speedup_vs_eager", "geomean_speedup_vs_eager", "Geomean vs eager"),
    ("geomean_speedup_vs_compile", "geomean_speedup_vs_compile", "Geomean vs compile"),
]


def reported(request: HttpRequest) -> HttpResponse:
    pools = _pools()
    pool_slug = request.GET.get("hardware") or next(
        (p.slug for p in pools if p.kind == HardwarePool.KIND_GPU), settings.DEFAULT_HARDWARE_POOL)
    hw = next((p for p in pools if p.slug == pool_slug), None)
    if hw is None and request.GET.get("hardware"):
        raise Http404(f"Unknown hardware pool '{pool_slug}'.")
    try:
        table = reported_table()
    except FileNotFoundError:
        table = None
    subsets: list[dict[str, Any]] = []
    any_measured = False
    if table:
        order = list(dict.fromkeys(r["subset"] for r in table.rows))
        for subset in order:
            level = int(subset.removeprefix("level")) if subset.startswith("level") else None
            ours = {}
            if hw is not None:
                ours = {r.entrant.lower(): r for r in selectors.leaderboard_rows(pool=hw.slug, level=level)}
            lines = []
            for r in (x for x in table.rows if x["subset"] == subset):
                mine = ours.get(r["entrant"].lower())
                any_measured |= mine is not None
                cells = []
                for reported_key, our_key, _ in REPORTED_COLUMNS:
                    value = float(r[reported_key])
                    is_rate = reported_key.endswith("_rate")
                    cells.append({"reported": value, "is_rate": is_rate,
                                  "verified": getattr(mine, our_key) if mine else None})
                lines.append({"entrant": r["entrant"], "cells": cells, "mine": mine})
            subsets.append({"name": subset, "title": "Overall" if level is None else f"Level {level}",
                            "lines": lines, "problems": len(selectors.suite_problems(pool=hw.slug, level=level))
                            if hw else 0})
    return render(request, "leaderboard/reported.html", {
        "table": table, "subsets": subsets, "columns": REPORTED_COLUMNS, "pool": hw, "pools": pools,
        "any_measured": any_measured,
    })


# --- moderation (staff) ---------------------------------------------------------------------------------


class ModerateSubmissionForm(forms.Form):
    moderation = forms.ChoiceField(choices=Submission.MODERATION_CHOICES)
    reason = forms.CharField(max_length=500)


class BanForm(forms.Form):
    banned = forms.BooleanField(required=False)
    reason = forms.CharField(max_length=500)


def _back(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = fallback
    return HttpResponseRedirect(target)


@staff_member_required
@require_POST
def moderate_submission(request: HttpRequest, pk: int) -> HttpResponse:
    submission = get_object_or_404(Submission.objects.select_related("pool", "problem", "entrant"), pk=pk)
    fallback = reverse("leaderboard:problem", args=[submission.pool.slug, submission.problem.slug])
    form = ModerateSubmissionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose hacked, invalid or ok, and give a reason (at most 500 characters).")
        return _back(request, fallback)
    try:
        submission_moderate(submission=submission, moderation=form.cleaned_data["moderation"],
                            reason=form.cleaned_data["reason"], actor=request.user)
    except (ValidationError, PermissionDenied) as e:
        messages.error(request, " ".join(getattr(e, "messages", [str(e)])))
        return _back(request, fallback)
    label = dict(Submission.MODERATION_CHOICES)[submission.moderation]
    messages.success(request, f"Submission #{submission.pk} by {submission.entrant.name} is now {label.lower()}.")
    return _back(request, fallback)


@staff_member_required
@require_POST
def ban_entrant(request: HttpRequest, slug: str) -> HttpResponse:
    entrant = get_object_or_404(Entrant, slug=slug)
    fallback = reverse("leaderboard:home")
    form = BanForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a reason (at most 500 characters): it is logged and shown to the owner.")
        return _back(request, fallback)
    try:
        entrant_ban(entrant=entrant, reason=form.cleaned_data["reason"], actor=request.user,
                    banned=form.cleaned_data["banned"])
    except (ValidationError, PermissionDenied) as e:
        messages.error(request, " ".join(getattr(e, "messages", [str(e)])))
        return _back(request, fallback)
    state = "banned from every board" if entrant.is_banned else "back on the boards"
    messages.success(request, f"{entrant.name} is {state}.")
    return _back(request, fallback)
