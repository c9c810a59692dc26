"""The site's pages for problems and submissions (the REST API lives in api_urls.py)."""

from django.urls import path

from apps.submissions import views

urlpatterns = [
    path("problems/", views.problem_list, name="problem-list"),
    path("problems/<slug:slug>/", views.problem_detail, name="problem-detail"),
    path("problems/<slug:slug>/ane-weights.npz", views.problem_ane_weights, name="problem-ane-weights"),
    path("submissions/<int:pk>/", views.submission_detail, name="submission-detail"),
    path("submit/", views.submit, name="submit"),
    path("me/submissions/", views.my_submissions, name="my-submissions"),
    path("me/tokens/", views.api_tokens, name="api-tokens"),
    path("signup/", views.signup, name="signup"),
]
