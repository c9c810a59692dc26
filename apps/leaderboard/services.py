"""Moderation: staff take a submission out of the rankings or ban an entrant. Every action is logged."""

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from apps.leaderboard.models import ModerationAction
from apps.submissions.models import Entrant, Submission

logger = logging.getLogger(__name__)

_SUBMISSION_ACTIONS = {
    Submission.MODERATION_HACKED: ModerationAction.ACTION_MARK_HACKED,
    Submission.MODERATION_INVALID: ModerationAction.ACTION_MARK_INVALID,
    Submission.MODERATION_OK: ModerationAction.ACTION_RESTORE,
}


def _require_staff(actor: Any) -> None:
    if not (actor and actor.is_authenticated and actor.is_staff):
        raise PermissionDenied("Only staff can moderate.")


def _clean_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "Give a reason: the owner of the entry will read it."})
    if len(reason) > 500:
        raise ValidationError({"reason": "Keep the reason under 500 characters."})
    return reason


def _publish_board_change(*, pools: set[str], entrant: str, problem: str | None) -> None:
    """Tell open boards to re-fetch, in the shape apps/submissions/events.py sends (evaluation_id None)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        for pool in pools:
            async_to_sync(layer.group_send)(
                f"leaderboard.{pool}",
                {"type": "leaderboard.updated", "pool": pool, "problem": problem, "entrant": entrant,
                 "evaluation_id": None},
            )
    except Exception:
        # Live updates are a convenience: the boards read the database on the next load.
        logger.exception("Could not tell the %s boards about a moderation.", ", ".join(sorted(pools)))


def submission_moderate(*, submission: Submission, moderation: str, reason: str, actor: Any) -> Submission:
    """Mark a submission hacked or invalid (it leaves the rankings, stays for audit), or restore it (`ok`)."""
    _require_staff(actor)
    if moderation not in _SUBMISSION_ACTIONS:
        raise ValidationError({"moderation": f"Unknown moderation '{moderation}': use hacked, invalid or ok."})
    reason = _clean_reason(reason)
    with transaction.atomic():
        submission.moderation = moderation
        submission.moderation_reason = reason if moderation != Submission.MODERATION_OK else ""
        submission.full_clean()
        submission.save(update_fields=["moderation", "moderation_reason"])
        action = ModerationAction(
            actor=actor, action=_SUBMISSION_ACTIONS[moderation], submission=submission,
            entrant_id=submission.entrant_id, reason=reason,
        )
        action.full_clean()
        action.save()
        pool, entrant, problem = submission.pool.slug, submission.entrant.slug, submission.problem.slug
        transaction.on_commit(lambda: _publish_board_change(pools={pool}, entrant=entrant, problem=problem))
    return submission


def entrant_ban(*, entrant: Entrant, reason: str, actor: Any, banned: bool = True) -> Entrant:
    """Ban an entrant from every board (banned=False lifts the ban). Its submissions stay for audit."""
    _require_staff(actor)
    reason = _clean_reason(reason)
    if entrant.kind == Entrant.KIND_BASELINE and banned:
        raise ValidationError({"entrant": "The baselines cannot be banned: they are the reference."})
    with transaction.atomic():
        entrant.is_banned = banned
        entrant.ban_reason = reason if banned else ""
        entrant.full_clean()
        entrant.save(update_fields=["is_banned", "ban_reason"])
        action = ModerationAction(
            actor=actor, action=ModerationAction.ACTION_BAN if banned else ModerationAction.ACTION_UNBAN,
            entrant=entrant, reason=reason,
        )
        action.full_clean()
        action.save()
        pools = set(entrant.submissions.values_list("pool__slug", flat=True).distinct())
        slug = entrant.slug
        transaction.on_commit(lambda: _publish_board_change(pools=pools, entrant=slug, problem=None))
    return entrant
