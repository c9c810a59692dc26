"""Django admin for problems, entrants, tokens, submissions and evaluations.

What the evaluator or a service wrote is read-only here: hashes, sources, results, statuses (a status changed
by hand would skip the guarded transitions). Moderation and bans go through apps/leaderboard/services.py, which
logs them: the submission page and the leaderboards carry those forms for staff.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from apps.submissions.models import (
    AccountLimits,
    ApiToken,
    Entrant,
    Evaluation,
    Problem,
    ProblemVersion,
    SignupAddress,
    Submission,
)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ProblemVersionInline(ReadOnlyInline):
    model = ProblemVersion
    fields = ("version", "content_hash", "created_at")


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "level", "tracks", "version", "is_active", "reveal_at", "updated_at")
    list_filter = ("level", "is_active", "pools")
    search_fields = ("slug", "title", "description")
    filter_horizontal = ("pools",)
    # The source changes only through `manage.py load_problems`, which keeps the version history.
    readonly_fields = ("slug", "source", "content_hash", "version", "origin", "created_at", "updated_at")
    fields = ("slug", "title", "level", "description", "pools", "is_active", "reveal_at", "origin", "version",
              "content_hash", "source", "created_at", "updated_at")
    inlines = [ProblemVersionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Problem]:
        return super().get_queryset(request).prefetch_related("pools")

    @admin.display(description="Tracks")
    def tracks(self, obj: Problem) -> str:
        return ", ".join(p.slug for p in obj.pools.all())


@admin.register(ProblemVersion)
class ProblemVersionAdmin(admin.ModelAdmin):
    list_display = ("problem", "version", "content_hash", "created_at")
    list_filter = ("problem__level",)
    search_fields = ("problem__slug", "content_hash")
    readonly_fields = ("problem", "version", "source", "content_hash", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class ApiTokenInline(ReadOnlyInline):
    model = ApiToken
    fields = ("prefix", "label", "created_at", "last_used_at", "revoked_at")


@admin.register(Entrant)
class EntrantAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "owner", "model_name", "model_version", "sources_public", "is_banned",
                    "created_at")
    list_filter = ("kind", "is_banned", "sources_public")
    search_fields = ("name", "slug", "owner__username", "model_name")
    autocomplete_fields = ("owner",)
    # Bans go through the leaderboard's moderation service (logged, and the boards are told).
    readonly_fields = ("is_banned", "ban_reason", "created_at")
    inlines = [ApiTokenInline]

    def get_prepopulated_fields(self, request: HttpRequest, obj: Entrant | None = None) -> dict:
        return {"slug": ("name",)} if obj is None else {}


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "entrant", "label", "created_at", "last_used_at", "revoked_at")
    list_filter = ("entrant__kind",)
    search_fields = ("prefix", "label", "entrant__name")
    readonly_fields = ("entrant", "key_hash", "prefix", "created_at", "last_used_at", "revoked_at")
    fields = ("entrant", "label", "prefix", "key_hash", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A token is shown once when made: entrants make theirs on /me/tokens/ or with create_entrant.
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        from apps.submissions import services

        tokens = list(queryset.filter(revoked_at__isnull=True))
        for token in tokens:
            services.api_token_revoke(token=token)
        self.message_user(request, f"Revoked {len(tokens)} token(s).")


class EvaluationInline(ReadOnlyInline):
    model = Evaluation
    fields = ("status", "stage", "verdict", "attempt", "runner", "runtime_us", "speedup_vs_eager",
              "speedup_vs_compile", "queued_at", "finished_at")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "entrant", "problem", "pool", "language", "moderation", "created_at", "page")
    list_filter = ("pool", "language", "moderation", "entrant__kind", "problem__level")
    search_fields = ("=id", "entrant__name", "problem__slug", "sha256")
    list_select_related = ("entrant", "problem", "pool")
    date_hierarchy = "created_at"
    readonly_fields = ("entrant", "problem", "problem_version", "pool", "language", "source", "sha256",
                       "created_at", "moderation", "moderation_reason")
    inlines = [EvaluationInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # submissions come through services.submission_create (the API or /submit/)

    @admin.display(description="Page")
    def page(self, obj: Submission) -> str:
        return format_html('<a href="{}">view</a>', reverse("submission-detail", args=[obj.pk]))


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ("id", "submission", "status", "stage", "verdict", "attempt", "runner", "runtime_us",
                    "speedup_vs_eager", "speedup_vs_compile", "queued_at", "finished_at")
    list_filter = ("status", "verdict", "stage", "submission__pool")
    search_fields = ("=id", "=submission__id", "submission__entrant__name", "submission__problem__slug")
    list_select_related = ("submission__entrant", "submission__problem", "runner")
    date_hierarchy = "queued_at"
    readonly_fields = [f.name for f in Evaluation._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class AccountLimitsInline(admin.StackedInline):
    model = AccountLimits
    can_delete = True
    extra = 0
    max_num = 1


@admin.register(AccountLimits)
class AccountLimitsAdmin(admin.ModelAdmin):
    list_display = ("user", "max_entrants")
    search_fields = ("user__username", "user__email")
    raw_id_fields = ("user",)


@admin.register(SignupAddress)
class SignupAddressAdmin(admin.ModelAdmin):
    """Sign-ups of the last hour per address (a hash of it): what SIGNUPS_PER_IP_PER_HOUR counts. Read-only."""

    list_display = ("ip_hash", "created_at")
    search_fields = ("=ip_hash",)
    readonly_fields = ("ip_hash", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


# The user's page carries its limits: staff raise an account's entrant cap where they look the account up.
User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class UserWithLimitsAdmin(UserAdmin):
    inlines = [*UserAdmin.inlines, AccountLimitsInline]
