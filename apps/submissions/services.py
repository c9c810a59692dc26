"""Writes: problems, entrants, submissions, and the guarded life of an evaluation.

Every status change of an Evaluation is one conditional UPDATE whose filter names the state it leaves (and the
job token and runner where a runner asks for it); a count of 0 means someone else got there first, and the
caller is refused. That is what makes a job claimed once and finished once, whatever runners and the sweeper do.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import logging
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from apps.devices.models import HardwarePool, Runner
from apps.submissions import ane
from apps.submissions.events import publish_evaluation
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
)
from gpu_runner import workdir as agent_workdir
from gpu_runner.contract import RUNNER_STAGES as JOB_STAGES

logger = logging.getLogger(__name__)

EVALUATE_TASK = "gpu_runner.evaluate_job"
PREPARE_ANE_TASK = "submissions.prepare_ane_job"
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


class ProblemError(Exception):
    """A problem file that cannot be loaded; the message says what to fix."""


# --- Problems ----------------------------------------------------------------------------------------

def problem_slug_from_path(path: Path) -> str:
    return path.stem.lower().replace("_", "-")


@dataclass
class ProblemFileInfo:
    title: str
    level: int
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def problem_file_read(*, path: Path, source: str) -> ProblemFileInfo:
    """Checks the KernelBench shape and reads the optional KERNELHUB dict without executing the file."""
    try:
        with AST_PARSE_LOCK:
            tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise ProblemError(f"{path}: not valid Python (line {e.lineno}: {e.msg}).") from None
    names = {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise ProblemError(
            f"{path}: a KernelBench problem defines class Model, get_inputs() and get_init_inputs() at module "
            f"level; missing: {', '.join(missing)}."
        )
    metadata: dict[str, Any] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "KERNELHUB"):
            try:
                metadata = ast.literal_eval(node.value)
            except ValueError:
                raise ProblemError(f"{path}: KERNELHUB must be a dict of literals (strings, numbers, lists).") \
                    from None
            if not isinstance(metadata, dict):
                raise ProblemError(f"{path}: KERNELHUB must be a dict.")
    level = metadata.get("level")
    if level is None:
        # The nearest folder named levelN: a checkout under a path such as /tmp/level0-tests/ must not count.
        match = next((m for part in reversed(path.parent.parts) if (m := re.fullmatch(r"level(\d+)", part))),
                     None)
        level = int(match.group(1)) if match else 1
    if not isinstance(level, int) or not 1 <= level <= 9:
        raise ProblemError(f"{path}: level must be an integer from 1 to 9, not {level!r}.")
    title = metadata.get("title") or path.stem.replace("_", " ").strip().capitalize()
    return ProblemFileInfo(title=str(title)[:200], level=level, description=str(metadata.get("description", "")),
                           metadata=metadata)


def problem_default_pools(*, path: Path) -> list[HardwarePool]:
    """Pools for a bundled file by its nearest track folder: problems/cpu/** -> `cpu`, problems/gpu/** -> every
    active GPU pool, problems/ane/** -> every active ANE pool; elsewhere, DEFAULT_HARDWARE_POOL."""
    for part in reversed([p.lower() for p in path.resolve().parent.parts]):
        if part == "cpu":
            return list(HardwarePool.objects.filter(slug="cpu", is_active=True))
        if part == "gpu":
            return list(HardwarePool.objects.filter(kind=HardwarePool.KIND_GPU, is_active=True))
        if part == "ane":
            return list(HardwarePool.objects.filter(kind=HardwarePool.KIND_ANE, is_active=True))
    return list(HardwarePool.objects.filter(slug=settings.DEFAULT_HARDWARE_POOL))


@transaction.atomic
def problem_load_from_file(*, path: Path, level: int | None = None, hardware: list[str] | None = None,
                           slug: str | None = None, title: str | None = None,
                           origin: str | None = None) -> tuple[Problem, str]:
    """Creates or updates the problem of a file; a changed source makes a new ProblemVersion.

    `slug`, `title` (unless the file's metadata has one) and `origin` override what the file name gives;
    import_kernelbench names l1-19-relu from KernelBench/level1/19_ReLU.py that way.
    """
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProblemError(f"{path}: cannot read it ({e}).") from None
    info = problem_file_read(path=path, source=source)
    if level is not None:
        info.level = level
    if title and not info.metadata.get("title"):
        info.title = title[:200]
    if hardware:
        pools = list(HardwarePool.objects.filter(slug__in=hardware))
        unknown = sorted(set(hardware) - {p.slug for p in pools})
        if unknown:
            raise ProblemError(
                f"Unknown hardware pool {', '.join(unknown)}: create it first (`manage.py create_runner --name N "
                f"--pool {unknown[0]}` creates a pool with its first runner), or pick one of "
                f"{', '.join(HardwarePool.objects.values_list('slug', flat=True)) or 'none yet'}."
            )
    else:
        pools = problem_default_pools(path=path)
    slug = slug or problem_slug_from_path(path)
    content_hash = sha256_text(source)
    now = timezone.now()

    problem = Problem.objects.select_for_update().filter(slug=slug).first()
    if problem is None:
        problem = Problem(slug=slug, title=info.title, level=info.level, description=info.description,
                          source=source, content_hash=content_hash, version=1, origin=origin or str(path),
                          created_at=now, updated_at=now)
        problem.full_clean()
        problem.save()
        ProblemVersion.objects.create(problem=problem, version=1, source=source, content_hash=content_hash)
        problem.pools.set(pools)
        return problem, "created"

    changed = False
    if problem.content_hash != content_hash:
        problem.version += 1
        problem.source = source
        problem.content_hash = content_hash
        ProblemVersion.objects.create(problem=problem, version=problem.version, source=source,
                                      content_hash=content_hash)
        changed = True
    for attr in ("title", "level", "description"):
        if getattr(problem, attr) != getattr(info, attr):
            setattr(problem, attr, getattr(info, attr))
            changed = True
    if set(problem.pools.all()) != set(pools):
        problem.pools.set(pools)
        changed = True
    if not changed:
        return problem, "unchanged"
    problem.updated_at = now
    problem.full_clean()
    problem.save()
    return problem, "updated"


# --- Entrants and their tokens -----------------------------------------------------------------------

def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


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

# CPython 3.11's AST builder keeps its recursion depth in state that the threads of a process share; two
# requests parsing at once (ASGI runs each sync view on its own thread) once failed with "SystemError: AST
# constructor recursion depth mismatch" under load (python/cpython#106905 is the report). The web process parses
# one source at a time: a parse takes well under a millisecond and holds the GIL anyway.
AST_PARSE_LOCK = threading.Lock()


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
            _dispatch_on_commit(evaluation)
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
        _dispatch_on_commit(evaluation, publish=False)
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


def _dispatch_on_commit(evaluation: Evaluation, *, publish: bool = True) -> None:
    transaction.on_commit(lambda: evaluation_dispatch(evaluation_id=evaluation.pk, attempt=0, evaluation=evaluation,
                                                      publish=publish))


# --- Dispatch and the guarded transitions ------------------------------------------------------------

def evaluation_dispatch(*, evaluation_id: int, attempt: int, evaluation: Evaluation | None = None,
                        publish: bool = True) -> bool:
    """Sends a queued evaluation to its pool's queue with a fresh job token (attempt -> attempt + 1).

    The filter on `attempt` makes two dispatchers of the same attempt send one job between them. The token is
    only ever in the message: the row keeps its hash, so the database alone cannot write a result.
    `evaluation`: the row as submission_create made it, its submission's relations loaded; it is updated in
    memory along with the row (the API answers with it), which saves reading it back. `publish=False` skips the
    live event (a channel-layer round trip, 3-17 ms measured in-process).
    """
    from kernelhub.celery import app

    token = secrets.token_urlsafe(32)
    now = timezone.now()
    changes = {"job_token_hash": token_hash(token), "attempt": attempt + 1, "last_progress_at": now,
               "stage": "queued"}
    sent = Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.STATUS_QUEUED, attempt=attempt).update(
        **changes)
    if not sent:
        return False
    if evaluation is None:
        evaluation = Evaluation.objects.select_related("submission__problem_version", "submission__pool",
                                                       "submission__problem").get(pk=evaluation_id)
    else:
        for name, value in changes.items():
            setattr(evaluation, name, value)
    submission = evaluation.submission
    job = {
        "evaluation_id": evaluation.pk,
        "job_token": token,
        "attempt": evaluation.attempt,
        "problem_slug": submission.problem.slug,
        "problem_source": submission.problem_version.source,
        "solution_source": submission.source,
        "language": submission.language,
        "device": submission.pool.device,
        # Unpredictable: a solution must not be able to precompute the inputs of its own evaluation.
        "seed": secrets.randbelow(2**31),
    }
    task, queue = EVALUATE_TASK, submission.pool.queue
    if submission.pool.kind == HardwarePool.KIND_ANE:
        # Validated and converted on the site first (apps/submissions/ane.py), which then sends it on to the Mac
        # pool with its prepared `ane` entry, or stores the verdict of an ineligible graph at once.
        task, queue = PREPARE_ANE_TASK, settings.CELERY_TASK_DEFAULT_QUEUE
    try:
        app.send_task(task, kwargs={"job": job}, queue=queue)
    except Exception:
        # The broker is down: the row stays queued and the sweeper sends it again.
        logger.exception("Could not send evaluation %s to %s; the sweeper will retry.", evaluation_id,
                         submission.pool.queue)
        return False
    if publish:
        publish_evaluation(evaluation)
    return True


class JobRefused(Exception):
    """A runner's request on a job that it may not make now; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, *, status: int = 409, code: str = "conflict") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def _job_for_runner(*, evaluation_id: int, runner: Runner, job_token: str) -> Evaluation:
    evaluation = (Evaluation.objects.select_related("submission__pool")
                  .filter(pk=evaluation_id).first())
    if evaluation is None:
        raise JobRefused(f"No job {evaluation_id}.", status=404, code="not_found")
    if not job_token or not hmac.compare_digest(evaluation.job_token_hash, token_hash(job_token)):
        raise JobRefused("This job token is not (or no longer) valid for this job: it was re-queued or "
                         "the token is wrong. Drop the job.", status=403, code="bad_job_token")
    if evaluation.submission.pool_id != runner.pool_id:
        raise JobRefused(f"This job belongs to pool {evaluation.submission.pool.slug}, not to this runner's "
                         f"pool {runner.pool.slug}.", status=403, code="wrong_pool")
    return evaluation


def evaluation_claim(*, evaluation_id: int, runner: Runner, job_token: str) -> Evaluation:
    """queued -> running for the runner holding the current token. The same runner may claim again a job
    that it was running (its worker died and the broker redelivered the message)."""
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    now = timezone.now()
    fresh = Evaluation.objects.filter(pk=evaluation.pk, job_token_hash=evaluation.job_token_hash)
    claimed = fresh.filter(status=Evaluation.STATUS_QUEUED).update(
        status=Evaluation.STATUS_RUNNING, runner=runner, started_at=now, last_progress_at=now, stage="queued",
    )
    if not claimed:
        # A redelivery after the worker died mid-job: counts as an attempt, so a job that kills its worker
        # every time ends failed instead of looping.
        claimed = fresh.filter(status=Evaluation.STATUS_RUNNING, runner=runner,
                               attempt__lt=settings.JOB_MAX_ATTEMPTS).update(
            started_at=now, last_progress_at=now, stage="queued", attempt=F("attempt") + 1,
        )
        if not claimed and evaluation.status == Evaluation.STATUS_RUNNING and evaluation.runner_id == runner.pk:
            evaluation_requeue(evaluation=evaluation, reason="the runner's worker died during the job")
    if not claimed:
        evaluation.refresh_from_db()
        raise JobRefused(f"Job {evaluation.pk} is {evaluation.status}; it cannot be claimed.")
    evaluation.refresh_from_db()
    publish_evaluation(evaluation)
    return evaluation


def evaluation_stage(*, evaluation_id: int, runner: Runner, job_token: str, stage: str) -> Evaluation:
    """Records a stage of a running job; the same stage again just says the runner is alive."""
    if stage not in JOB_STAGES:
        raise JobRefused(f"Unknown stage {stage!r}: use one of {', '.join(JOB_STAGES)}.", status=400,
                         code="invalid")
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    previous_stage = evaluation.stage
    moved = Evaluation.objects.filter(
        pk=evaluation.pk, job_token_hash=evaluation.job_token_hash, status=Evaluation.STATUS_RUNNING,
        runner=runner,
    ).update(stage=stage, last_progress_at=timezone.now())
    if not moved:
        raise JobRefused(f"Job {evaluation.pk} is not running on this runner: stop working on it.")
    evaluation.refresh_from_db()
    if previous_stage != stage:
            publish_evaluation(evaluation)
    return evaluation


def _float_or_none(result: dict, key: str) -> float | None:
    value = result.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JobRefused(f"result.{key} must be a number or null, not {type(value).__name__}.", status=400,
                         code="invalid")
    return float(value)


def _result_text(result: dict) -> str:
    """The build or run log, where the evaluator gives one."""
    for key in ("log", "compile_log", "build_log"):
        value = result.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def evaluation_finish(*, evaluation_id: int, runner: Runner, job_token: str, result: dict) -> Evaluation:
    """running -> done, once, with the evaluator's object stored as is."""
    if not isinstance(result, dict):
        raise JobRefused("`result` must be the evaluator's JSON object.", status=400, code="invalid")
    verdict = result.get("verdict")
    if verdict not in Evaluation.VERDICTS:
        raise JobRefused(f"result.verdict must be one of {', '.join(Evaluation.VERDICTS)}, not {verdict!r}.",
                         status=400, code="invalid")
    correct = result.get("correct")
    if correct is not None and not isinstance(correct, bool):
        raise JobRefused("result.correct must be true, false or null.", status=400, code="invalid")
    timings = {key: _float_or_none(result, key) for key in
               ("runtime_us", "eager_us", "compile_us", "speedup_vs_eager", "speedup_vs_compile")}
    if verdict != "accepted":
        # A time only counts for a correct, accepted kernel.
        timings["runtime_us"] = None
        timings["speedup_vs_eager"] = None
        timings["speedup_vs_compile"] = None
    message = result.get("message") or ""
    if not isinstance(message, str):
        message = str(message)
    # Where and how it ran, kept apart for the pages and the dashboards (the whole object is in `result`).
    system_info = {key: result[key] for key in ("device", "versions", "isolation") if key in result}
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    now = timezone.now()
    finished = Evaluation.objects.filter(
        pk=evaluation.pk, job_token_hash=evaluation.job_token_hash, status=Evaluation.STATUS_RUNNING,
        runner=runner,
    ).update(
        status=Evaluation.STATUS_DONE, stage="done", verdict=verdict, correct=bool(correct) if correct is not None
        else None, message=message[:20000], result=result, log=_result_text(result)[:200000],
        system_info=system_info,
        finished_at=now, last_progress_at=now, **timings,
    )
    if not finished:
        evaluation.refresh_from_db()
        raise JobRefused(f"Job {evaluation.pk} is {evaluation.status} and not running on this runner: "
                         "its result is not taken.")
    evaluation.refresh_from_db()
    publish_evaluation(evaluation)
    return evaluation


def evaluation_give_up(*, evaluation_id: int, runner: Runner, job_token: str, message: str) -> Evaluation:
    """A runner could not evaluate the job (its own failure, not the solution's): re-queue it now."""
    evaluation = _job_for_runner(evaluation_id=evaluation_id, runner=runner, job_token=job_token)
    if evaluation.runner_id != runner.pk or evaluation.status != Evaluation.STATUS_RUNNING:
        raise JobRefused(f"Job {evaluation.pk} is not running on this runner.")
    evaluation_requeue(evaluation=evaluation, reason=f"runner {runner.name} gave up: {message[:500]}")
    evaluation.refresh_from_db()
    return evaluation


def evaluation_requeue(*, evaluation: Evaluation, reason: str) -> str:
    """Takes a job back from its runner (or re-sends a long-queued one): a new token and attempt + 1, or
    `failed` after JOB_MAX_ATTEMPTS. Returns "requeued", "failed" or "skipped" (it moved meanwhile)."""
    guard = Evaluation.objects.filter(pk=evaluation.pk, status=evaluation.status, attempt=evaluation.attempt,
                                      job_token_hash=evaluation.job_token_hash)
    now = timezone.now()
    if evaluation.attempt >= settings.JOB_MAX_ATTEMPTS:
        failed = guard.update(
            status=Evaluation.STATUS_FAILED, stage="done", finished_at=now, last_progress_at=now,
            job_token_hash="",
            message=(f"No runner finished this evaluation in {evaluation.attempt} attempts (last: {reason}). "
                     "This is an infrastructure failure, not a verdict on the code: submit again to retry."),
        )
        if failed:
            evaluation.refresh_from_db()
            publish_evaluation(evaluation)
            return "failed"
        return "skipped"
    # Back to queued under the old token's hash; evaluation_dispatch then rotates it.
    back = guard.update(status=Evaluation.STATUS_QUEUED, runner=None, stage="queued", started_at=None,
                        last_progress_at=now, message=f"re-queued: {reason}"[:20000])
    if not back:
        return "skipped"
    logger.warning("Re-queued evaluation %s (attempt %s): %s", evaluation.pk, evaluation.attempt, reason)
    transaction.on_commit(lambda: evaluation_dispatch(evaluation_id=evaluation.pk, attempt=evaluation.attempt))
    return "requeued"


def evaluations_sweep() -> dict[str, int]:
    """Re-queues running jobs whose runner fell silent, and queued jobs nobody picked up for too long.
    `held`: silent jobs left alone because their runner still heartbeats and may still be running them.
    `waiting`: queued jobs of a pool with no runner online to take them, left in its queue."""
    now = timezone.now()
    counts = {"requeued": 0, "failed": 0, "skipped": 0, "held": 0, "waiting": 0}
    silent = Evaluation.objects.filter(
        status=Evaluation.STATUS_RUNNING,
        last_progress_at__lt=now - timedelta(seconds=settings.JOB_SILENCE_TIMEOUT_S),
    ).select_related("runner")
    # A silent job whose runner still heartbeats is still held by it (a stage that kept the worker from posting,
    # such as a pre-screen holding the GIL): handing it to another attempt would run it twice at once, and block
    # the pool's next runner too. Celery's hard time limit (1.2 x soft, runner_config) kills the worker's job
    # process, so past it (and a heartbeat's margin) the job is no longer held; a silent runner is left to the
    # offline sweep (apps/devices), and one that never heartbeats (an API client without serve) to the silence.
    hard_limit_s = int(settings.JOB_SOFT_TIME_LIMIT_S * 1.2) + settings.RUNNER_OFFLINE_AFTER_S
    heartbeat_since = now - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)
    for evaluation in silent:
        runner = evaluation.runner
        if (runner is not None and runner.last_heartbeat_at is not None and runner.last_heartbeat_at >= heartbeat_since
                and evaluation.started_at is not None
                and evaluation.started_at > now - timedelta(seconds=hard_limit_s)):
            counts["held"] += 1
            continue
        runner_name = evaluation.runner.name if evaluation.runner else "unknown"
        reason = (f"runner {runner_name} said nothing for more than {settings.JOB_SILENCE_TIMEOUT_S} s "
                  f"during {evaluation.stage}")
        with transaction.atomic():
            counts[evaluation_requeue(evaluation=evaluation, reason=reason)] += 1
    stale = Evaluation.objects.filter(
        status=Evaluation.STATUS_QUEUED,
        last_progress_at__lt=now - timedelta(seconds=settings.JOB_QUEUED_TIMEOUT_S),
    )
    never_sent = Evaluation.objects.filter(
        status=Evaluation.STATUS_QUEUED, attempt=0,
        queued_at__lt=now - timedelta(seconds=settings.JOB_SILENCE_TIMEOUT_S),
    )
    # A pool with no runner online (none yet, as the h200 pool of `make run` on a machine without a GPU, or all
    # offline, disabled or draining) has nobody to take its jobs: they wait in its queue, nothing was lost, so no
    # attempt is spent on them and none fails. Their clock restarts, so that a runner that joins gets the whole
    # JOB_QUEUED_TIMEOUT_S to take them before they are sent again.
    served_pools = set(Runner.objects.filter(
        is_disabled=False, is_draining=False,
        last_heartbeat_at__gte=now - timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S),
    ).values_list("pool_id", flat=True))
    waiting = []
    for evaluation in (stale | never_sent).select_related("submission__pool"):
        if evaluation.attempt > 0 and evaluation.submission.pool_id not in served_pools:
            waiting.append(evaluation.pk)
            continue
        reason = f"no runner of pool {evaluation.submission.pool.slug} took it"
        if evaluation.attempt == 0:
            # Its dispatch after commit never reached the broker.
            counts["requeued" if evaluation_dispatch(evaluation_id=evaluation.pk, attempt=0) else "skipped"] += 1
            continue
        with transaction.atomic():
            counts[evaluation_requeue(evaluation=evaluation, reason=reason)] += 1
    counts["waiting"] = Evaluation.objects.filter(pk__in=waiting, status=Evaluation.STATUS_QUEUED).update(
        last_progress_at=now)
    return counts
