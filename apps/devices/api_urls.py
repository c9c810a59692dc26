from django.urls import path

from apps.devices import api

urlpatterns = [
    path("runners/me/", api.RunnerMeApi.as_view(), name="api-runner-me"),
    path("runners/heartbeat/", api.RunnerHeartbeatApi.as_view(), name="api-runner-heartbeat"),
    path("runners/calibration/", api.RunnerCalibrationApi.as_view(), name="api-runner-calibration"),
]
