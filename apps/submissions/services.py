"""Writes: problems, entrants, submissions, and the guarded life of an evaluation.

Every status change of an Evaluation is one conditional UPDATE whose filter names the state it leaves (and the
job token and runner where a runner asks for it); a count of 0 means someone else got there first, and the
caller is refused. That is what makes a job claimed once and finished once, whatever runners and the sweeper do.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from apps.devices.models import HardwarePool
from apps.submissions import ane
from apps.submissions.lifecycle import dispatch_on_commit
from apps.submissions.models import (
    AccountLimits,
    ApiToken,
    Entrant,
    Evaluation,
    Problem,
    ProblemVersion,
    SignupAddress,
    Submission,
    sha256_text,
    token_hash,
)
from apps.submissions.problems import AST_PARSE_LOCK
from gpu_runner import workdir as agent_workdir

logger = logging.getLogger(__name__)

LANGUAGES = tuple(code for code, _ in Submission.LANGUAGE_CHOICES)


class SubmissionError(Exception):
    """A refusal the API turns into a 4xx in its one error shape."""

    def __init__(self, message: str, *, code: str = "invalid", status: int = 400,
                 fields: dict[str, list[str]] | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.fields = fields or {}
        self.retry_after = retry_after


# --- Entrants and their tokens -----------------------------------------------------------------------

def api_token_create(*, entrant: Entrant, label: str = "") -> tuple[ApiToken, str]:
    token = "kh_" + secrets.token_urlsafe(32)
    api_token = ApiToken.objects.create(entrant=entrant, key_hash=token_hash(token), prefix=token[:10],
                                        label=label)
    return api_token, token


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


@transaction.atomic
def entrant_create(*, name: str, kind: str, model_name: str = "", model_version: str = "",
                   owner: Any = None) -> tuple[Entrant, str]:
    """Creates the entrant (and, without an owner, a user of its own) and its first API token."""
    name = name.strip()
    if not name:
        raise SubmissionError("An entrant needs a name.", fields={"name": ["This field is required."]})
    kinds = [k for k, _ in Entrant.KIND_CHOICES]
    if kind not in kinds:
        raise SubmissionError(f"Unknown entrant kind {kind!r}: use one of {', '.join(kinds)}.",
                              fields={"kind": [f"Use one of {', '.join(kinds)}."]})
    slug = slugify(name)[:100]
    if not slug:
        raise SubmissionError(f"The name {name!r} has no letters or digits to make a URL from.",
                              fields={"name": ["Use letters or digits."]})
    if Entrant.objects.filter(name=name).exists() or Entrant.objects.filter(slug=slug).exists():
        raise SubmissionError(f"An entrant named {name!r} already exists: pick another name.",
                              code="conflict", status=409, fields={"name": ["Already taken."]})
    if owner is not None:
        _entrant_cap_check(owner=owner)
    else:
        User = get_user_model()
        username = slug[:150]
        if User.objects.filter(username=username).exists():
            username = f"{slug[:140]}-{secrets.token_hex(3)}"
        owner = User.objects.create_user(username=username)
        owner.set_unusable_password()
        owner.save()
    entrant = Entrant(name=name, slug=slug, kind=kind, model_name=model_name, model_version=model_version,
                      owner=owner)
    entrant.full_clean()
    entrant.save()
    _, token = api_token_create(entrant=entrant, label="created with the entrant")
    return entrant, token


def account_max_entrants(*, user: Any) -> int:
    """The entrants `user` may own: its AccountLimits (raised by staff in the admin) or ENTRANTS_PER_ACCOUNT."""
    raised = AccountLimits.objects.filter(user=user).values_list("max_entrants", flat=True).first()
    return int(raised) if raised is not None else settings.ENTRANTS_PER_ACCOUNT


def _entrant_cap_check(*, owner: Any) -> None:
    """Quotas belong to the account, so entrants are capped: one account must not multiply itself."""
    if owner.is_staff:
        return
    # Serialises one account's entrant creations (PostgreSQL), so that two at once cannot both pass the cap.
    list(get_user_model().objects.select_for_update().filter(pk=owner.pk).values_list("pk", flat=True))
    cap = account_max_entrants(user=owner)
    owned = Entrant.objects.filter(owner=owner).count()
    if owned >= cap:
        raise SubmissionError(
            f"Your account already owns {owned} entrant{'s' if owned != 1 else ''}, the most it may own ({cap}). "
            "Submit as one of them (an entrant can have several API tokens), or ask the site's staff to raise "
            "your account's entrant limit.", code="entrant_limit", status=403)


def signup_rate_check(*, ip: str) -> None:
    """At most SIGNUPS_PER_IP_PER_HOUR accounts from one network address in any sliding hour; raises
    SubmissionError (429, with when to retry) beyond."""
    limit = settings.SIGNUPS_PER_IP_PER_HOUR
    window_start = timezone.now() - timedelta(hours=1)
    # The limit-th newest sign-up of the address's hour (index signup_address_recent), as for submissions.
    limit_th = (SignupAddress.objects.filter(ip_hash=_ip_hash(ip), created_at__gte=window_start)
                .order_by("-created_at").values_list("created_at", flat=True)[limit - 1:limit].first())
    if limit_th is None:
        return
    retry_after = max(1, int((limit_th + timedelta(hours=1) - timezone.now()).total_seconds()) + 1)
    raise SubmissionError(
        f"Too many accounts were created from your network address in the last hour (at most {limit}). Sign in "
        f"to an account you made, or try again in {max(1, retry_after // 60)} minutes.",
        code="rate_limited", status=429, retry_after=retry_after)


def signup_record(*, ip: str) -> None:
    ip_hash = _ip_hash(ip)
    SignupAddress.objects.filter(ip_hash=ip_hash, created_at__lt=timezone.now() - timedelta(hours=1)).delete()
    SignupAddress.objects.create(ip_hash=ip_hash)


def _ip_hash(ip: str) -> str:
    return hashlib.sha256(ip.encode("utf-8")).hexdigest()


def entrant_get_or_create_for_examples() -> Entrant:
    """The entrant the bundled example solutions are submitted as."""
    entrant = Entrant.objects.filter(slug="kernelhub-examples").first()
    if entrant is None:
        entrant, _ = entrant_create(name="KernelHub examples", kind=Entrant.KIND_HUMAN)
        # Staff: the site's own entrant is not rate limited (its user has no password: nobody logs in as it).
        entrant.owner.is_staff = True
        entrant.owner.save(update_fields=["is_staff"])
    return entrant


# --- Submissions -------------------------------------------------------------------------------------



def detect_language(source: str) -> str | None:
    from gpu_runner.formats import detect_language as evaluator_detect

    try:
        with AST_PARSE_LOCK:
            language = evaluator_detect(source)
    except ValueError:
        return None
    return language or None


def _rate_limit_check(*, entrant: Entrant) -> None:
    """At most SUBMISSIONS_PER_HOUR evaluations asked for per account (all the entrants its user owns, together)
    in any sliding hour: an account that makes more entrants gets no more submissions."""
    if entrant.owner.is_staff:
        return  # the site's own entrants (examples, baselines) and staff
    limit = settings.SUBMISSIONS_PER_HOUR
    window_start = timezone.now() - timedelta(hours=1)
    # Only the limit-th newest row of the account's window (index evaluation_entrant_recent, one range per entrant
    # of the account, and an account owns few: ENTRANTS_PER_ACCOUNT), rather than a count of the whole window or
    # `limit` rows sent to Python: none, the account is under the limit; else its leaving the window frees a slot.
    # One query: the account's entrants as a subquery.
    entrant_ids = Entrant.objects.filter(owner_id=entrant.owner_id).values("pk")
    limit_th = (Evaluation.objects.filter(entrant_id__in=entrant_ids, queued_at__gte=window_start)
                .order_by("-queued_at").values_list("queued_at", flat=True)[limit - 1:limit].first())
    if limit_th is None:
        return
    retry_after = max(1, int((limit_th + timedelta(hours=1) - timezone.now()).total_seconds()) + 1)
    raise SubmissionError(
        f"Rate limit: {limit} submissions per hour per account (all the entrants of an account together). "
        f"Try again in {retry_after} s.",
        code="rate_limited", status=429, retry_after=retry_after,
    )


def submission_create(*, entrant: Entrant, problem_slug: str, source: str, language: str | None = None,
                      hardware: str | None = None, rerun: bool = False,
                      rate_limit: bool = True) -> tuple[Submission, Evaluation, bool]:
    """Validates, deduplicates, rate-limits, stores; the evaluation is dispatched once the row is committed.

    `rate_limit=False` is for operators' bulk imports (import_generations), never for the API.
    """
    if entrant.is_banned:
        reason = f" ({entrant.ban_reason})" if entrant.ban_reason else ""
        raise SubmissionError(f"Entrant {entrant.name} is banned from submitting{reason}.", code="banned",
                              status=403)
    if not isinstance(source, str) or not source.strip():
        raise SubmissionError("The source is empty: send the solution file's text (class ModelNew ...).",
                              fields={"source": ["Must not be empty."]})
    wd = None
    if agent_workdir.is_bundle(source):
        # A CUDA Agent workdir in its text form (gpu_runner/workdir.py), limited by the workdir's own limits.
        try:
            wd = agent_workdir.parse_bundle(source)
        except agent_workdir.WorkdirError as e:
            raise SubmissionError(f"The workdir is refused: {e}.", code="invalid_workdir",
                                  fields={"workdir": [str(e)]}) from None
    elif ane.is_package_source(source):
        # A zipped Core ML package (the ANE track), as base64: limited by its own size, weights included.
        try:
            size = ane.package_size(source)
        except ane.PackageError as e:
            raise SubmissionError(str(e), code="invalid_package", fields={"source": [str(e)]}) from None
        if size > settings.MAX_PACKAGE_BYTES:
            raise SubmissionError(ane.package_too_big_message(size), code="too_large",
                                  fields={"source": [f"At most {settings.MAX_PACKAGE_BYTES} bytes zipped."]})
    else:
        size = len(source.encode("utf-8"))
        if size > settings.MAX_SOURCE_BYTES:
            raise SubmissionError(
                f"The source is {size} bytes; the limit is {settings.MAX_SOURCE_BYTES} bytes.",
                code="too_large", fields={"source": [f"At most {settings.MAX_SOURCE_BYTES} bytes."]},
            )
    # The problem with its current version in one query (a problem whose version row is missing: two).
    version = (ProblemVersion.objects.select_related("problem")
               .filter(problem__slug=problem_slug, problem__is_active=True, version=F("problem__version")).first())
    problem = version.problem if version else Problem.objects.filter(slug=problem_slug, is_active=True).first()
    if problem is None:
        raise SubmissionError(
            f"Unknown problem {problem_slug!r}: GET /api/v1/problems/ lists the problems (by slug).",
            code="unknown_problem", fields={"problem": ["No such problem."]},
        )
    pool_slug = hardware or settings.DEFAULT_HARDWARE_POOL
    # An active pool that offers the problem: one query; the queries that say what is wrong only when it is not.
    pool = problem.pools.filter(slug=pool_slug, is_active=True).first()
    if pool is None:
        pool = HardwarePool.objects.filter(slug=pool_slug).first()
        if pool is None or not pool.is_active:
            active = ", ".join(HardwarePool.objects.filter(is_active=True).values_list("slug", flat=True))
            state = "is not accepting submissions" if pool else "does not exist"
            raise SubmissionError(f"Hardware pool {pool_slug!r} {state}; active pools: {active or 'none'}.",
                                  code="unknown_pool", fields={"hardware": [f"Use one of: {active or 'none'}."]})
        offered = list(problem.pools.values_list("slug", flat=True))
        raise SubmissionError(
            f"Problem {problem.slug} is not offered on pool {pool.slug}; it is on: {', '.join(offered) or 'none'}.",
            code="not_offered", fields={"hardware": [f"Use one of: {', '.join(offered) or 'none'}."]},
        )
    if wd is not None:
        workdir_check_problem(wd=wd, problem=problem)
        language = wd.language
    elif language:
        if language not in LANGUAGES:
            raise SubmissionError(f"Unknown language {language!r}: use one of {', '.join(LANGUAGES)}.",
                                  fields={"language": [f"Use one of {', '.join(LANGUAGES)}."]})
    elif pool.kind == HardwarePool.KIND_ANE:
        language = "coreml"  # a package, a MIL builder or a ModelNew to convert: all Core ML
    else:
        language = detect_language(source)
        if language is None:
            raise SubmissionError(
                "Cannot tell the solution's language: build the kernel with torch.utils.cpp_extension."
                "load_inline (C++ or CUDA), Triton @triton.jit, or CuPy RawKernel, or say `language`.",
                code="unknown_language", fields={"language": ["Could not be detected; set it."]},
            )
    if ane.is_package_source(source) and pool.kind != HardwarePool.KIND_ANE:
        raise SubmissionError(
            f"A Core ML package runs on an ANE pool (`<chip>-ane`), not on {pool.slug}: submit it with "
            "hardware set to one of the problem's ANE pools.", code="language_not_supported",
            fields={"hardware": ["A package needs an ANE pool."]})
    if language not in pool.languages:
        raise SubmissionError(
            f"Pool {pool.slug} cannot run {language}; it runs: {', '.join(pool.languages) or 'nothing yet'}.",
            code="language_not_supported",
            fields={"language": [f"Pool {pool.slug} runs {', '.join(pool.languages) or 'nothing'}."]},
        )

    digest = sha256_text(source)
    with transaction.atomic():
        # Serialises one account's submissions (PostgreSQL), so the account's rate limit and the dedup cannot be
        # raced, from one entrant or from several.
        list(get_user_model().objects.select_for_update().filter(pk=entrant.owner_id).values_list("pk", flat=True))
        if version is None:
            version = problem.versions.filter(version=problem.version).first()
        if version is None:
            version = ProblemVersion.objects.create(problem=problem, version=problem.version,
                                                    source=problem.source, content_hash=problem.content_hash)
        existing = (Submission.objects.filter(entrant=entrant, problem=problem, pool=pool, sha256=digest,
                                              problem_version=version).order_by("-created_at").first())
        if existing is not None:
            # Its relations are the rows the filter named, already read: no joins for them.
            existing.entrant, existing.problem, existing.problem_version, existing.pool = (
                entrant, problem, version, pool)
            latest = existing.evaluations.order_by("-queued_at", "-pk").first()
            # A failed evaluation (the infrastructure gave up) is retried by submitting again.
            if latest is not None and not rerun and latest.status != Evaluation.STATUS_FAILED:
                return existing, latest, False
            if rate_limit:
                _rate_limit_check(entrant=entrant)
            evaluation = Evaluation.objects.create(submission=existing)
            dispatch_on_commit(evaluation)
            return existing, evaluation, True
        if rate_limit:
            _rate_limit_check(entrant=entrant)
        submission = Submission(entrant=entrant, problem=problem, problem_version=version, pool=pool,
                                language=language, source=source, sha256=digest)
        # The related rows were just read (the entrant locked): checking that each exists is 4 queries for nothing.
        submission.full_clean(exclude=["entrant", "problem", "problem_version", "pool"])
        submission.save()
        evaluation = Evaluation.objects.create(submission=submission)
        # Nobody watches a submission whose id nobody knows yet: no live event for its first dispatch.
        dispatch_on_commit(evaluation, publish=False)
    return submission, evaluation, True


def workdir_check_problem(*, wd: agent_workdir.Workdir, problem: Problem) -> None:
    """The workdir's model.py must be the problem it is submitted for."""
    if wd.model_py is not None and not agent_workdir.same_problem(wd.model_py, problem.source):
        raise SubmissionError(
            f"The workdir's model.py differs from problem {problem.slug} (version {problem.version}) on this site: "
            "it was made for another problem, or the problem was edited. Generate it again from the problem's "
            f"current file (GET /api/v1/problems/{problem.slug}/), or submit it for the problem it was made for.",
            code="problem_mismatch", fields={"problem": ["The workdir's model.py is not this problem."]})


def workdir_problem_slug(*, wd: agent_workdir.Workdir, problem_slug: str | None, hardware: str | None) -> str:
    """The problem a workdir is for: the slug given, or the active problem whose file its model.py is."""
    if problem_slug:
        return problem_slug
    if wd.model_py is None:
        raise SubmissionError("The workdir has no model.py: say which problem it solves (`problem`, its slug).",
                              fields={"problem": ["Required for a workdir without model.py."]})
    found = list(Problem.objects.filter(is_active=True, content_hash=sha256_text(wd.model_py))
                 .values_list("slug", flat=True))
    if not found:
        wanted = agent_workdir.normalised_hash(wd.model_py)
        found = [slug for slug, source in Problem.objects.filter(is_active=True).values_list("slug", "source")
                 if agent_workdir.normalised_hash(source) == wanted]
    if len(found) > 1 and hardware:
        found = [slug for slug in found if Problem.objects.filter(slug=slug, pools__slug=hardware).exists()] or found
    if not found:
        raise SubmissionError(
            "The workdir's model.py is none of this site's problems: say which problem it solves (`problem`), "
            "and make its model.py that problem's file (GET /api/v1/problems/ lists them).",
            code="unknown_problem", fields={"problem": ["No problem has this model.py."]})
    if len(found) > 1:
        raise SubmissionError(f"The workdir's model.py is the file of several problems ({', '.join(found)}): say "
                              "which one (`problem`).", fields={"problem": [f"One of {', '.join(found)}."]})
    return found[0]


def workdir_rules(*, requested: str | None, pool_slug: str | None) -> str:
    """The rule set a workdir runs under: the pool's where settings.RULES_BY_POOL names one, else the submission's
    choice, else CUDA Agent's own (its format, its rules). A problem's KERNELHUB["rules"] wins over both in the
    evaluator (gpu_runner.workdir.effective_rules)."""
    by_pool = getattr(settings, "RULES_BY_POOL", {}) or {}
    pool_slug = pool_slug or settings.DEFAULT_HARDWARE_POOL
    if by_pool.get(pool_slug) in agent_workdir.RULE_SETS:
        return str(by_pool[pool_slug])
    if requested and requested not in agent_workdir.RULE_SETS:
        raise SubmissionError(f"Unknown rule set {requested!r}: use one of {', '.join(agent_workdir.RULE_SETS)}.",
                              fields={"rules": [f"One of {', '.join(agent_workdir.RULE_SETS)}."]})
    return requested or agent_workdir.RULES_CUDA_AGENT


def submission_create_from_workdir(*, entrant: Entrant, archive: bytes | None = None,
                                   wd: agent_workdir.Workdir | None = None, problem_slug: str | None = None,
                                   rules: str | None = None, hardware: str | None = None, rerun: bool = False,
                                   rate_limit: bool = True) -> tuple[Submission, Evaluation, bool]:
    """A CUDA Agent workdir, as an archive (zip, tar.gz) or already read: checked before anything is unpacked,
    stored as its text form, matched to its problem by slug or by its model.py."""
    if wd is None:
        try:
            wd = agent_workdir.read_archive(archive or b"")
        except agent_workdir.WorkdirError as e:
            raise SubmissionError(f"The workdir archive is refused: {e}.", code="invalid_workdir",
                                  fields={"workdir": [str(e)]}) from None
    wd.rules = workdir_rules(requested=rules, pool_slug=hardware)
    slug = workdir_problem_slug(wd=wd, problem_slug=problem_slug, hardware=hardware)
    return submission_create(entrant=entrant, problem_slug=slug, source=wd.to_bundle(), hardware=hardware,
                             rerun=rerun, rate_limit=rate_limit)
