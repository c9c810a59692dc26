"""Live events: after a commit, tell the submission's page and the pool's leaderboard what changed."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from apps.submissions import selectors
from apps.submissions.models import Evaluation

logger = logging.getLogger(__name__)


def evaluation_event_payload(evaluation: Evaluation) -> dict[str, Any]:
    """The `evaluation` object of an `evaluation.update` event (docs/ARCHITECTURE.md, Live events)."""
    return {
        "id": evaluation.pk,
        "submission_id": evaluation.submission_id,
        "status": evaluation.status,
        "stage": evaluation.stage,
        "verdict": evaluation.verdict or None,
        "correct": evaluation.correct,
        "runtime_us": evaluation.runtime_us,
        "eager_us": evaluation.eager_us,
        "compile_us": evaluation.compile_us,
        "speedup_vs_eager": evaluation.speedup_vs_eager,
        "speedup_vs_compile": evaluation.speedup_vs_compile,
        # Events go to everyone watching: a message that can quote the (maybe private) source stays out; the
        # page fetches it when its viewer may see it.
        "message": evaluation.message if selectors.evaluation_message_visible(
            evaluation=evaluation, source_visible=False) else "",
    }


def publish_evaluation(evaluation: Evaluation) -> None:
    """Sends the evaluation's state to `submission.<id>`, and to `leaderboard.<pool>` once it is done."""
    submission_group = f"submission.{evaluation.submission_id}"
    update = {"type": "evaluation.update", "evaluation": evaluation_event_payload(evaluation)}
    board_event = None
    if evaluation.status == Evaluation.STATUS_DONE:
        submission = evaluation.submission
        pool_slug = submission.pool.slug
        board_event = (f"leaderboard.{pool_slug}", {
            "type": "leaderboard.updated", "pool": pool_slug, "problem": submission.problem.slug,
            "entrant": submission.entrant.slug, "evaluation_id": evaluation.pk,
        })

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(submission_group, update)
            if board_event is not None:
                async_to_sync(layer.group_send)(*board_event)
        except Exception:
            # Live updates are a convenience: the state is in the database and the API serves it.
            logger.exception("Could not publish the update of evaluation %s.", evaluation.pk)

    transaction.on_commit(send)
