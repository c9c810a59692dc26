"""Websocket for one submission's page: subscribe to `submission.<id>` and relay `evaluation.update`.

Anyone may watch: an event carries status, stage and timings (public on the boards anyway) and never the
source or a compiler message that could quote it (apps/submissions/events.py leaves those out).
"""

from typing import Any

from asgiref.sync import async_to_sync
from channels.generic.websocket import JsonWebsocketConsumer

from apps.submissions.events import evaluation_event_payload
from apps.submissions.models import Evaluation, Submission


class SubmissionConsumer(JsonWebsocketConsumer):
    group_name = ""

    def connect(self) -> None:
        submission_id = int(self.scope["url_route"]["kwargs"]["submission_id"])
        if not Submission.objects.filter(pk=submission_id).exists():
            self.close(code=4404)  # before accept: the handshake is refused
            return
        self.group_name = f"submission.{submission_id}"
        async_to_sync(self.channel_layer.group_add)(self.group_name, self.channel_name)
        self.accept()
        # The state now, so that a page opened mid-evaluation (or after an event it missed) is current.
        latest = Evaluation.objects.filter(submission_id=submission_id).order_by("-queued_at", "-pk").first()
        if latest is not None:
            self.send_json({"type": "evaluation.update", "evaluation": evaluation_event_payload(latest)})

    def disconnect(self, code: int) -> None:
        if self.group_name:
            async_to_sync(self.channel_layer.group_discard)(self.group_name, self.channel_name)

    def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""

    def evaluation_update(self, event: dict[str, Any]) -> None:
        self.send_json({"type": "evaluation.update", "evaluation": event["evaluation"]})
