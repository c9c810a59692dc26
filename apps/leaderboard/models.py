"""The moderation log: who marked which submission or banned which entrant, when and why."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class ModerationAction(models.Model):
    ACTION_MARK_HACKED = "mark_hacked"
    ACTION_MARK_INVALID = "mark_invalid"
    ACTION_RESTORE = "restore"
    ACTION_BAN = "ban"
    ACTION_UNBAN = "unban"
    ACTION_CHOICES = [
        (ACTION_MARK_HACKED, "Marked a submission hacked"),
        (ACTION_MARK_INVALID, "Marked a submission invalid"),
        (ACTION_RESTORE, "Restored a submission to the rankings"),
        (ACTION_BAN, "Banned an entrant"),
        (ACTION_UNBAN, "Lifted a ban"),
    ]

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="moderation_actions")
    action = models.CharField(max_length=16, choices=ACTION_CHOICES)
    # Set for submission actions; null for bans (which name only the entrant).
    submission = models.ForeignKey(
        "submissions.Submission", null=True, blank=True, on_delete=models.PROTECT, related_name="moderation_actions"
    )
    entrant = models.ForeignKey("submissions.Entrant", on_delete=models.PROTECT, related_name="moderation_actions")
    reason = models.CharField(max_length=500)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.submission_id or self.entrant_id}: {self.reason}"
