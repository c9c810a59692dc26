"""The site's pages: problems, submissions, the submit form, a user's own submissions and API tokens.

Writes go through apps/submissions/services.py; these views only read, validate forms and render.
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from ane_runner.problem import ProblemError
from apps.devices.models import HardwarePool
from apps.submissions import ane, problems, result_display, selectors, services
from apps.submissions.forms import EntrantCreateForm, SubmitForm
from apps.submissions.models import ApiToken, Entrant, Evaluation, Problem, Submission
from apps.submissions.starters import LANGUAGE_FOR_DEVICE, starter_source
from gpu_runner import workdir as agent_workdir


class AuthenticatedHttpRequest(HttpRequest):
    """The request a @login_required view receives: its user is signed in, never AnonymousUser."""

    user: User


def _latest_evaluations() -> Prefetch:
    return Prefetch("evaluations", queryset=Evaluation.objects.order_by("-queued_at"))


def problem_list(request: HttpRequest) -> HttpResponse:
    levels = sorted(set(Problem.objects.filter(is_active=True).values_list("level", flat=True)))
    pools = list(HardwarePool.objects.filter(is_active=True, problems__is_active=True).distinct())
    online_since = timezone.now() - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)
    # A pool without a runner online still takes submissions: they wait in its queue, and the page says so.
    idle_pools = [p for p in pools if not p.runners.filter(is_disabled=False, last_heartbeat_at__gte=online_since).exists()]

    level = request.GET.get("level", "")
    if level and not (level.isdigit() and int(level) in levels):
        messages.warning(request, f"There is no level {level!r}: showing every level.")
        level = ""
    pool_slug = request.GET.get("pool", "")
    if pool_slug and pool_slug not in {p.slug for p in pools}:
        messages.warning(request, f"There is no track {pool_slug!r}: showing every track.")
        pool_slug = ""

    problems = selectors.problem_list(pool=pool_slug or None, level=int(level) if level else None)
    # Accepted, not moderated away, by an entrant in good standing: what counts as "solved" (selectors._solved).
    problems = problems.annotate(solved_by=selectors.problem_solved_by_column(pool=pool_slug or None))

    mine_solved: set[int] = set()
    if request.user.is_authenticated:
        mine = Submission.objects.filter(
            entrant__owner=request.user, evaluations__verdict="accepted", moderation=Submission.MODERATION_OK
        )
        mine_solved = set(mine.values_list("problem_id", flat=True))

    return render(
        request,
        "submissions/problem_list.html",
        {
            "problems": problems,
            "levels": levels,
            "pools": pools,
            "level": level,
            "pool_slug": pool_slug,
            "mine_solved": mine_solved,
            "idle_pools": idle_pools,
        },
    )


def problem_detail(request: HttpRequest, slug: str) -> HttpResponse:
    # The "Solved by" count in the problem's own query: one round trip less.
    problem = get_object_or_404(
        Problem.objects.prefetch_related("pools").annotate(solved_by=selectors.problem_solved_by_column()),
        slug=slug, is_active=True)
    pools = list(problem.pools.all())

    # One starter per language the problem's tracks run (a CPU pool: C++, a GPU pool: CUDA).
    starters = []
    for language in dict.fromkeys(LANGUAGE_FOR_DEVICE.get(p.device, "") for p in pools):
        if language:
            starters.append({"language": language, "source": _starter(problem.source, language)})

    my_submissions = []
    if request.user.is_authenticated:
        my_submissions = list(
            Submission.objects.filter(problem=problem, entrant__owner=request.user)
            .select_related("entrant", "pool")
            .prefetch_related(_latest_evaluations())[:50]
        )
    return render(
        request,
        "submissions/problem_detail.html",
        {
            "problem": problem,
            "pools": pools,
            "starters": starters,
            "my_submissions": my_submissions,
            # django-stubs 6.1: get_object_or_404 returns the annotated type but the plugin's hook that adds
            # annotate()'s names does not see through it (QuerySet.get does); solved_by is there at run time.
            "solved_by": problem.solved_by,  # type: ignore[attr-defined]
            "ane": ane.problem_ane_panel(problem=problem, pools=pools),
        },
    )


@lru_cache(maxsize=256)
def _starter(reference_source: str, language: str) -> str:
    """A problem's starter, built once per process and reference: it parses the reference (see AST_PARSE_LOCK)."""
    with problems.AST_PARSE_LOCK:
        return starter_source(reference_source=reference_source, language=language)


def problem_ane_weights(request: HttpRequest, slug: str) -> HttpResponse:
    """The reference weights an uploaded Core ML package must embed, as an .npz (numpy, no pickle)."""
    problem = get_object_or_404(Problem.objects.filter(pools__kind=HardwarePool.KIND_ANE).distinct(), slug=slug,
                                is_active=True)
    try:
        reference = ane.problem_ane_reference(problem=problem)
    except ProblemError as e:
        return HttpResponse(f"This problem's reference cannot be built ({e}): tell the site's operators.",
                            status=500, content_type="text/plain")
    response = HttpResponse(reference["weights_npz"], content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{problem.slug}-weights.npz"'
    response["X-Reference-Digest"] = reference["digest"]
    return response


def submission_detail(request: HttpRequest, pk: int) -> HttpResponse:
    submission = get_object_or_404(
        Submission.objects.select_related("entrant", "problem", "pool", "entrant__owner"), pk=pk
    )
    evaluations = list(submission.evaluations.select_related("runner").order_by("-queued_at"))
    evaluation = evaluations[0] if evaluations else None
    can_see_source = selectors.submission_source_visible(submission=submission, user=request.user)
    public_result = (
        selectors.evaluation_public_result(evaluation=evaluation, source_visible=can_see_source)
        if evaluation else {}
    )
    context = {
        "submission": submission,
        "evaluation": evaluation,
        "evaluations": evaluations,
        "can_see_source": can_see_source,
        "is_owner": request.user.is_authenticated and submission.entrant.owner_id == request.user.pk,
        # The same rule as the API: messages that can quote the source are the owner's.
        "show_message": evaluation is not None and selectors.evaluation_message_visible(
            evaluation=evaluation, source_visible=can_see_source),
        "timing_rows": _timing_rows(public_result),
        "checked_sections": result_display.checked_sections(public_result),
        "device_rows": result_display.device_rows(public_result, evaluation.system_info if evaluation else {}),
        "version_rows": result_display.version_rows(public_result, evaluation.system_info if evaluation else {}),
        "queue": selectors.evaluation_queue_estimate(evaluation=evaluation) if evaluation else None,
        # Host paths never reach a page (result_display.redact_paths), the owner's own log included.
        "message_text": result_display.redact_paths(evaluation.message) if evaluation else "",
        "log_text": result_display.redact_paths(
            str((evaluation.result or {}).get("compile_log") or evaluation.log or "")) if evaluation else "",
        "run_s": (evaluation.finished_at - evaluation.started_at).total_seconds()
        if evaluation and evaluation.started_at and evaluation.finished_at else None,
        "wait_s": (evaluation.started_at - evaluation.queued_at).total_seconds()
        if evaluation and evaluation.started_at else None,
        **_workdir_context(submission, evaluation, can_see_source),
    }
    # The live page re-fetches only the evaluation part when a result lands (no full reload).
    if request.GET.get("partial") == "evaluation":
        return render(request, "submissions/_evaluation.html", context)
    return render(request, "submissions/submission_detail.html", context)


def _workdir_context(submission: Submission, evaluation: Evaluation | None, can_see_source: bool) -> dict:
    """The rule set that applied (the evaluator's word once it ran, else the submission's), CUDA Agent's own metric
    (the profiler's summed device time, where the evaluator gives it), and a workdir's files."""
    result = evaluation.result if evaluation is not None and isinstance(evaluation.result, dict) else {}
    wd = None
    if agent_workdir.is_bundle(submission.source):
        try:
            wd = agent_workdir.parse_bundle(submission.source)
        except agent_workdir.WorkdirError:
            wd = None
    rules = result.get("rules") or (wd.rules if wd else agent_workdir.RULES_KERNELHUB)
    kernel_time = result.get("kernel_time_us")
    return {
        "rule_set": agent_workdir.RULE_SETS.get(str(rules), str(rules)),
        "rule_set_slug": rules,
        "is_workdir": agent_workdir.is_bundle(submission.source),
        "workdir_files": sorted(wd.files.items()) if wd is not None and can_see_source else [],
        "kernel_time_us": kernel_time if isinstance(kernel_time, int | float) and not isinstance(kernel_time, bool)
        else None,
    }


def _timing_rows(result: dict) -> list[dict]:
    """The evaluator's timing statistics (gpu_runner.timing.summarize) of the solution and both baselines."""
    given = result.get("baselines")
    baselines = given if isinstance(given, dict) else {}
    rows = []
    for label, stats in (("This kernel", result.get("stats")), ("PyTorch eager", baselines.get("eager")),
                         ("torch.compile", baselines.get("compile"))):
        if isinstance(stats, dict) and stats.get("n"):
            ci = stats.get("ci95_us")
            rows.append({"label": label, "ci": ci if isinstance(ci, list | tuple) and len(ci) == 2 else None,
                         **stats})
    return rows


@login_required
@require_http_methods(["GET", "POST"])
def submit(request: AuthenticatedHttpRequest) -> HttpResponse:
    entrants = list(Entrant.objects.filter(owner=request.user, is_banned=False))
    if request.method == "POST":
        form = SubmitForm(request.POST, request.FILES, entrants=entrants)
        if form.is_valid():
            try:
                entrant = form.cleaned_data.get("entrant") or _personal_entrant(request)
                if "workdir_archive" in form.cleaned_data:
                    problem = form.cleaned_data.get("problem")
                    submission, _evaluation, created = services.submission_create_from_workdir(
                        entrant=entrant, archive=form.cleaned_data["workdir_archive"],
                        problem_slug=problem.slug if problem else None, rules=form.cleaned_data["rules"] or None,
                        hardware=form.cleaned_data["pool"].slug)
                else:
                    submission, _evaluation, created = services.submission_create(
                        entrant=entrant,
                        problem_slug=form.cleaned_data["problem"].slug,
                        source=form.cleaned_data["source_text"],
                        language=form.cleaned_data["language"] or None,
                        hardware=form.cleaned_data["pool"].slug,
                    )
            except services.SubmissionError as e:
                form.add_service_error(e)
            else:
                if not created:
                    messages.info(
                        request, "You had already submitted this exact source for this problem and track: "
                        "here is its evaluation. Ask for a re-run through the API if you need one."
                    )
                return redirect("submission-detail", pk=submission.pk)
    else:
        initial = {"pool": settings.DEFAULT_HARDWARE_POOL}
        if request.GET.get("problem"):
            initial["problem"] = request.GET["problem"]
        if request.GET.get("pool"):
            initial["pool"] = request.GET["pool"]
        form = SubmitForm(initial=initial, entrants=entrants)
    return render(request, "submissions/submit.html", {"form": form, "entrants": entrants})


def _personal_entrant(request: AuthenticatedHttpRequest) -> Entrant:
    """The user's own entrant of kind human, named after the username, created on the first submit."""
    existing = Entrant.objects.filter(owner=request.user, kind=Entrant.KIND_HUMAN).first()
    if existing:
        return existing
    username = request.user.get_username()
    for n in range(1, 100):
        # Another owner's entrant may hold the name (or its slug): try username-2, username-3...
        try:
            entrant, _token = services.entrant_create(
                name=username if n == 1 else f"{username}-{n}", kind=Entrant.KIND_HUMAN, owner=request.user
            )
            break
        except services.SubmissionError as e:
            if e.code != "conflict":
                raise
    else:
        raise services.SubmissionError(
            "Could not find a free entrant name for you: create an entrant on the API tokens page.",
            fields={"entrant": ["Create an entrant on the API tokens page first."]},
        )
    messages.success(
        request, f"Your entrant “{entrant.name}” was created: your submissions rank under that name. "
        "Create an API token for it on the API tokens page to submit from scripts."
    )
    return entrant


@login_required
def my_submissions(request: AuthenticatedHttpRequest) -> HttpResponse:
    submissions = (
        Submission.objects.filter(entrant__owner=request.user)
        .select_related("entrant", "problem", "pool")
        .prefetch_related(_latest_evaluations())
        .order_by("-created_at")
    )
    page = Paginator(submissions, 50).get_page(request.GET.get("page"))
    return render(request, "submissions/my_submissions.html", {"page": page})


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    new_token = None  # shown once, in this response only: it is never stored in clear
    new_token_entrant = None
    entrant_form = EntrantCreateForm()
    action = request.POST.get("action", "")
    if request.method == "POST" and action == "create_entrant":
        entrant_form = EntrantCreateForm(request.POST)
        if entrant_form.is_valid():
            try:
                new_token_entrant, new_token = services.entrant_create(
                    owner=request.user, **entrant_form.cleaned_data
                )
                entrant_form = EntrantCreateForm()
            except services.SubmissionError as e:
                for field, errors in (e.fields or {"": [e.message]}).items():
                    for msg in errors:
                        entrant_form.add_error(field if field in entrant_form.fields else None, msg)
    elif request.method == "POST" and action == "create_token":
        entrant = Entrant.objects.filter(owner=request.user, pk=request.POST.get("entrant") or 0).first()
        if entrant is None:
            messages.error(request, "Pick one of your own entrants to create a token for.")
        else:
            _token_obj, new_token = services.api_token_create(
                entrant=entrant, label=request.POST.get("label", "")[:100]
            )
            new_token_entrant = entrant
    elif request.method == "POST" and action == "revoke_token":
        token = ApiToken.objects.filter(entrant__owner=request.user, pk=request.POST.get("token") or 0).first()
        if token is None:
            messages.error(request, "That token is not one of yours, or no longer exists.")
        else:
            services.api_token_revoke(token=token)
            messages.success(request, f"Token {token.prefix}… revoked: requests carrying it now get 401.")
        return redirect("api-tokens")
    elif request.method == "POST":
        messages.error(request, "Unknown action: use the buttons on this page.")
        return redirect("api-tokens")

    entrants = Entrant.objects.filter(owner=request.user).prefetch_related(
        Prefetch("tokens", queryset=ApiToken.objects.order_by("-created_at"))
    )
    return render(
        request,
        "submissions/api_tokens.html",
        {
            "entrants": entrants,
            "entrant_form": entrant_form,
            "new_token": new_token,
            "new_token_entrant": new_token_entrant,
        },
    )


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    next_url = request.POST.get("next") or request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = "/"
    if request.user.is_authenticated:
        return redirect(next_url)
    form: UserCreationForm[Any] = UserCreationForm(request.POST or None)
    ip = request.META.get("REMOTE_ADDR") or ""
    if request.method == "POST" and form.is_valid():
        try:
            services.signup_rate_check(ip=ip)
        except services.SubmissionError as e:
            form.add_error(None, e.message)
            return render(request, "registration/signup.html", {"form": form, "next": next_url}, status=e.status)
        user = form.save()
        services.signup_record(ip=ip)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}. Pick a problem and submit a kernel.")
        return redirect(next_url)
    return render(request, "registration/signup.html", {"form": form, "next": next_url})
