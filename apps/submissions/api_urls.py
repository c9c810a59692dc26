from django.urls import path

from apps.submissions import api

urlpatterns = [
    path("problems/", api.ProblemListApi.as_view(), name="api-problem-list"),
    path("problems/<slug:slug>/", api.ProblemDetailApi.as_view(), name="api-problem-detail"),
    path("submissions/", api.SubmissionListCreateApi.as_view(), name="api-submission-list"),
    path("submissions/<int:submission_id>/", api.SubmissionDetailApi.as_view(), name="api-submission-detail"),
    path("jobs/<int:evaluation_id>/claim/", api.JobClaimApi.as_view(), name="api-job-claim"),
    path("jobs/<int:evaluation_id>/stage/", api.JobStageApi.as_view(), name="api-job-stage"),
    path("jobs/<int:evaluation_id>/result/", api.JobResultApi.as_view(), name="api-job-result"),
    path("jobs/<int:evaluation_id>/fail/", api.JobFailApi.as_view(), name="api-job-fail"),
]
