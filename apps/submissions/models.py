"""Problems, entrants, submissions and their evaluations."""

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.devices.models import HardwarePool, Runner
from gpu_runner import contract


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_hash(token: str) -> str:
    """What the database keeps of a secret token (an API token, a job token): never the token itself."""
    return sha256_text(token)


class Problem(models.Model):
    """A KernelBench-format problem. `source` is the current version; ProblemVersion keeps every one."""

    slug = models.SlugField(unique=True, max_length=120)
    title = models.CharField(max_length=200)
    level = models.PositiveSmallIntegerField(default=1)
    description = models.TextField(blank=True)
    source = models.TextField()
    content_hash = models.CharField(max_length=64)
    version = models.PositiveIntegerField(default=1)
    # Pools (tracks) this problem is offered on.
    pools = models.ManyToManyField(HardwarePool, related_name="problems", blank=True)
    # Where the problem came from: `bundled`, `kernelbench`, or a path.
    origin = models.CharField(max_length=300, blank=True)
    # Submitted sources of this problem become public after this date (null: never by date).
    reveal_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["level", "slug"]

    def __str__(self) -> str:
        return self.slug


class ProblemVersion(models.Model):
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    source = models.TextField()
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["problem", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["problem", "version"], name="problem_version_unique"),
        ]


class Entrant(models.Model):
    """The name on the leaderboard."""

    KIND_AGENT = "agent"
    KIND_LLM = "llm"
    KIND_HUMAN = "human"
    KIND_BASELINE = "baseline"
    KIND_CHOICES = [
        (KIND_AGENT, "RL agent"),
        (KIND_LLM, "Frontier LLM"),
        (KIND_HUMAN, "Human"),
        (KIND_BASELINE, "Baseline"),
    ]

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=KIND_CHOICES)
    model_name = models.CharField(max_length=100, blank=True)
    model_version = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="entrants")
    # Publish this entrant's sources to everyone.
    sources_public = models.BooleanField(default=False)
    is_banned = models.BooleanField(default=False)
    ban_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class AccountLimits(models.Model):
    """What staff raised for one account (in the admin, on the user's page); without a row, or with a blank field,
    the site's defaults apply (settings.ENTRANTS_PER_ACCOUNT)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="limits")
    max_entrants = models.PositiveSmallIntegerField(
        null=True, blank=True,
        help_text="Entrants this account may own; blank: the site's default (ENTRANTS_PER_ACCOUNT).")

    class Meta:
        verbose_name = "account limits"
        verbose_name_plural = "account limits"

    def __str__(self) -> str:
        return f"limits of {self.user}"


class SignupAddress(models.Model):
    """One sign-up from a network address (its SHA-256, not the address), for SIGNUPS_PER_IP_PER_HOUR; rows
    older than an hour are deleted at that address's next sign-up."""

    ip_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # The sign-up limit: one address's sign-ups of the last hour (services.signup_rate_check).
            models.Index(fields=["ip_hash", "created_at"], name="signup_address_recent"),
        ]


class ApiToken(models.Model):
    """An entrant's API token. Only its SHA-256 is stored; the token is shown once."""

    entrant = models.ForeignKey(Entrant, on_delete=models.CASCADE, related_name="tokens")
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


class Submission(models.Model):
    LANGUAGE_CHOICES = [
        ("cpp", "C++ (load_inline, CPU)"),
        ("cuda", "CUDA (load_inline)"),
        ("triton", "Triton"),
        ("cupy", "CuPy RawKernel/RawModule"),
        ("coreml", "Core ML (ANE)"),
    ]
    MODERATION_OK = "ok"
    MODERATION_HACKED = "hacked"
    MODERATION_INVALID = "invalid"
    MODERATION_CHOICES = [(MODERATION_OK, "OK"), (MODERATION_HACKED, "Hacked"), (MODERATION_INVALID, "Invalid")]

    entrant = models.ForeignKey(Entrant, on_delete=models.PROTECT, related_name="submissions")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="submissions")
    problem_version = models.ForeignKey(ProblemVersion, on_delete=models.PROTECT, related_name="submissions")
    pool = models.ForeignKey(HardwarePool, on_delete=models.PROTECT, related_name="submissions")
    language = models.CharField(max_length=10, choices=LANGUAGE_CHOICES)
    source = models.TextField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    # Moderation: a hacked or invalid submission leaves the rankings and stays for audit.
    moderation = models.CharField(max_length=10, choices=MODERATION_CHOICES, default=MODERATION_OK)
    moderation_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Deduplication: the same source for the same problem version and pool.
            models.Index(fields=["entrant", "problem", "pool", "sha256"], name="submission_dedup"),
            # Rate limit: an entrant's submissions in the last hour.
            models.Index(fields=["entrant", "created_at"], name="submission_entrant_recent"),
            # Per-problem boards.
            models.Index(fields=["problem", "pool"], name="submission_problem_pool"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.entrant} on {self.problem}"


class Evaluation(models.Model):
    """One run of the evaluator on one submission. A re-run makes a new row."""

    STATUS_QUEUED = "queued"
    STATUS_RUNNING = "running"
    STATUS_DONE = "done"
    STATUS_FAILED = "failed"  # infrastructure failure after every attempt: no verdict on the code
    STATUS_CHOICES = [(s, s) for s in (STATUS_QUEUED, STATUS_RUNNING, STATUS_DONE, STATUS_FAILED)]
    FINAL_STATES = (STATUS_DONE, STATUS_FAILED)
    IN_PROGRESS_STATES = (STATUS_QUEUED, STATUS_RUNNING)

    # The runners' contract names them (gpu_runner/contract.py); the site only stores them.
    STAGES = contract.STAGES
    STAGE_CHOICES = [(s, s) for s in STAGES]

    VERDICTS = contract.VERDICTS
    VERDICT_CHOICES = [(v, v) for v in VERDICTS]

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="evaluations")
    # A copy of submission.entrant (save() fills it), so that the rate limit reads one entrant's evaluations of
    # the last hour from an index instead of joining every evaluation of the hour, site-wide, to its submission.
    # Null only for rows made by bulk_create without it (benchmarks); those are not rate limited.
    entrant = models.ForeignKey(Entrant, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                db_index=False)
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_QUEUED)
    stage = models.CharField(max_length=10, choices=STAGE_CHOICES, default="queued")
    verdict = models.CharField(max_length=16, choices=VERDICT_CHOICES, blank=True)
    attempt = models.PositiveSmallIntegerField(default=0)
    # Rotated at every dispatch: a runner that lost its job can no longer write it.
    job_token_hash = models.CharField(max_length=64, blank=True)
    runner = models.ForeignKey(Runner, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_progress_at = models.DateTimeField(null=True, blank=True)

    correct = models.BooleanField(null=True)
    runtime_us = models.FloatField(null=True, blank=True)
    eager_us = models.FloatField(null=True, blank=True)
    compile_us = models.FloatField(null=True, blank=True)
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    speedup_vs_compile = models.FloatField(null=True, blank=True)
    message = models.TextField(blank=True)
    # The evaluator's JSON object, as is.
    result = models.JSONField(default=dict, blank=True)
    log = models.TextField(blank=True)
    system_info = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-queued_at"]
        indexes = [
            # The sweeper: running jobs whose runner fell silent, and queued jobs never picked up.
            models.Index(fields=["status", "last_progress_at"], name="evaluation_status_progress"),
            # Leaderboards: accepted results per submission.
            models.Index(fields=["verdict", "submission"], name="evaluation_verdict_submission"),
            # Newest first (the default ordering): the admin's evaluation list and its date hierarchy.
            models.Index(fields=["-queued_at"], name="evaluation_queued_at"),
            # Rate limit: an entrant's newest evaluations of the last hour (services._rate_limit_check).
            models.Index(fields=["entrant", "-queued_at"], name="evaluation_entrant_recent"),
        ]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.entrant_id is None and self.submission_id is not None:
            self.entrant_id = self.submission.entrant_id
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"evaluation {self.pk} of submission {self.submission_id}: {self.status}"
