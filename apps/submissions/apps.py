from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "apps.submissions"
    label = "submissions"

    def ready(self) -> None:
        from apps.submissions import lifecycle

        lifecycle.connect_signals()
