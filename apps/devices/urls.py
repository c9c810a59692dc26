from django.urls import path

from apps.devices import views

urlpatterns = [
    path("", views.dashboard, name="devices-dashboard"),
    path("runners/<slug:name>/<slug:action>/", views.runner_action, name="devices-runner-action"),
]
