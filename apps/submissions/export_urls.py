"""The open dataset's download API (included under api/v1/ by kernelhub/urls.py)."""

from django.urls import path

from apps.submissions.export_api import DatasetFileApi, DatasetIndexApi

urlpatterns = [
    path("dataset/", DatasetIndexApi.as_view(), name="dataset-index"),
    path("dataset/<str:name>", DatasetFileApi.as_view(), name="dataset-file"),
]
