"""Moderation in the Django admin: actions on the submissions' and entrants' admin pages (which the
submissions app registers), each asking for a reason and going through services.py; the log, read-only."""

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from apps.leaderboard.models import ModerationAction
from apps.leaderboard.services import entrant_ban, submission_moderate
from apps.submissions.models import Entrant, Submission


def _reason_action(name: str, description: str, apply: Callable[[Any, str, Any], object]) -> Callable[..., Any]:
    """An admin action that first asks for a reason (shown to the owner and logged), then applies."""

    def action(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        reason = request.POST.get("reason", "").strip()
        if "apply" in request.POST:
            if not reason:
                modeladmin.message_user(request, "Give a reason: it is logged and shown to the owner.",
                                        messages.ERROR)
            else:
                done = 0
                for obj in queryset:
                    try:
                        apply(obj, reason, request.user)
                        done += 1
                    except (ValidationError, PermissionDenied) as e:
                        modeladmin.message_user(request, f"{obj}: {' '.join(getattr(e, 'messages', [str(e)]))}",
                                                messages.ERROR)
                modeladmin.message_user(request, f"{description}: {done} done.", messages.SUCCESS)
                return None
        return TemplateResponse(request, "leaderboard/admin_reason.html", {
            **modeladmin.admin_site.each_context(request),
            "title": description, "objects": list(queryset), "action": name, "reason": reason,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME, "opts": modeladmin.model._meta,
        })

    action.__name__ = name
    return admin.action(description=description)(action)


mark_hacked = _reason_action(
    "mark_hacked", "Mark hacked (remove from rankings)",
    lambda s, reason, user: submission_moderate(submission=s, moderation="hacked", reason=reason, actor=user))
mark_invalid = _reason_action(
    "mark_invalid", "Mark invalid (remove from rankings)",
    lambda s, reason, user: submission_moderate(submission=s, moderation="invalid", reason=reason, actor=user))
restore = _reason_action(
    "restore_to_rankings", "Restore to the rankings",
    lambda s, reason, user: submission_moderate(submission=s, moderation="ok", reason=reason, actor=user))
ban = _reason_action(
    "ban", "Ban from every board", lambda e, reason, user: entrant_ban(entrant=e, reason=reason, actor=user))
unban = _reason_action(
    "unban", "Lift the ban",
    lambda e, reason, user: entrant_ban(entrant=e, reason=reason, actor=user, banned=False))


def _add_actions(model: type, actions: list[Callable[..., Any]]) -> None:
    if not admin.site.is_registered(model):
        admin.site.register(model)
    model_admin: admin.ModelAdmin = admin.site.get_model_admin(model)
    model_admin.actions = [*(model_admin.actions or []), *actions]


_add_actions(Submission, [mark_hacked, mark_invalid, restore])
_add_actions(Entrant, [ban, unban])


@admin.register(ModerationAction)
class ModerationActionAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor", "action", "entrant", "submission", "reason")
    list_filter = ("action",)
    search_fields = ("reason", "entrant__name", "actor__username", "=submission__id")
    list_select_related = ("actor", "entrant", "submission")

    # The log is written by the services only, and never edited.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
