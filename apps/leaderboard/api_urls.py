from django.urls import path

from apps.leaderboard import api

urlpatterns = [
    path("leaderboard/", api.LeaderboardApi.as_view(), name="api-leaderboard"),
    path("leaderboard/ane/", api.AneLeaderboardApi.as_view(), name="api-ane-leaderboard"),
    path("problems/<slug:slug>/leaderboard/", api.ProblemLeaderboardApi.as_view(), name="api-problem-leaderboard"),
]
