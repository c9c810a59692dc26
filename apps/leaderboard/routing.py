from django.urls import re_path

from apps.leaderboard.consumers import LeaderboardConsumer

websocket_urlpatterns = [
    re_path(r"^ws/leaderboard/(?P<pool>[a-z0-9][a-z0-9-]{0,39})/$", LeaderboardConsumer.as_asgi()),
]
