from django.urls import path

from apps.leaderboard import views

app_name = "leaderboard"

urlpatterns = [
    path("", views.leaderboard_home, name="home"),
    # Before <pool>/: a pool named "reported" or "moderate" would be shadowed (pool slugs are hardware names).
    path("reported/", views.reported, name="reported"),
    path("moderate/submissions/<int:pk>/", views.moderate_submission, name="moderate-submission"),
    path("moderate/entrants/<slug:slug>/", views.ban_entrant, name="ban-entrant"),
    path("<slug:pool>/", views.board, name="board"),
    path("<slug:pool>/problems/<slug:slug>/", views.problem_board, name="problem"),
    path("<slug:pool>/entrants/<slug:slug>/", views.entrant_page, name="entrant"),
    path("<slug:pool>/compare/", views.compare, name="compare"),
]
