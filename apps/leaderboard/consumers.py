"""Websocket for public boards: subscribe to `leaderboard.<pool>` and relay `leaderboard.updated`.

No authentication: the boards are public and the event carries only slugs and an id. The page re-fetches
the rows from the API, so the numbers still come from the one selector.
"""

from typing import Any

from asgiref.sync import async_to_sync
from channels.generic.websocket import JsonWebsocketConsumer

from apps.devices.models import HardwarePool

EVENT_FIELDS = ("type", "pool", "problem", "entrant", "evaluation_id")


class LeaderboardConsumer(JsonWebsocketConsumer):
    group_name = ""

    def connect(self) -> None:
        pool = self.scope["url_route"]["kwargs"]["pool"]
        if not HardwarePool.objects.filter(slug=pool, is_active=True).exists():
            self.close(code=4404)  # before accept: the handshake is refused
            return
        self.group_name = f"leaderboard.{pool}"
        async_to_sync(self.channel_layer.group_add)(self.group_name, self.channel_name)
        self.accept()

    def disconnect(self, code: int) -> None:
        if self.group_name:
            async_to_sync(self.channel_layer.group_discard)(self.group_name, self.channel_name)

    def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""

    def leaderboard_updated(self, event: dict[str, Any]) -> None:
        self.send_json({key: event.get(key) for key in EVENT_FIELDS})
