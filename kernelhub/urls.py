from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.leaderboard.views import home
from apps.submissions.api import api_not_found


def public_endpoints_only(endpoints: list, **kwargs: object) -> list:
    """The public API schema leaves out the runners' endpoints (jobs, heartbeats, telemetry): they take a
    runner's secret, and docs/RUNNERS.md documents them for operators."""
    from apps.devices.authentication import RunnerAuthentication

    def runner_only(callback: object) -> bool:
        classes = getattr(getattr(callback, "cls", None), "authentication_classes", None) or []
        return bool(classes) and all(issubclass(c, RunnerAuthentication) for c in classes)

    return [e for e in endpoints if not runner_only(e[3])]


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(
        custom_settings={"PREPROCESSING_HOOKS": ["kernelhub.urls.public_endpoints_only"]}), name="schema"),
    # templates/api_docs.html: Swagger UI with a way back to the site.
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema", template_name="api_docs.html"),
         name="swagger-ui"),
    path("api/v1/", include("apps.submissions.api_urls")),
    path("api/v1/", include("apps.submissions.export_urls")),
    path("api/v1/", include("apps.leaderboard.api_urls")),
    path("api/v1/", include("apps.devices.api_urls")),
    # Last of the API: an unknown API path answers in the API's error shape, not with an HTML page.
    re_path(r"^api/", api_not_found),
    # Browsers ask for /favicon.ico on pages that name no icon (the API's JSON, files).
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"), permanent=True)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("leaderboard/", include("apps.leaderboard.urls")),
    path("staff/", include("apps.devices.urls")),
    # The front page: who leads each pool (apps/leaderboard/views.py).
    path("", home, name="home"),
    path("", include("apps.submissions.urls")),
]

# DEBUG off: a 500 under /api/ answers in the API's error shape, elsewhere with templates/500.html.
handler500 = "apps.submissions.api_errors.server_error"
