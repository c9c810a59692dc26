from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.submissions.api import api_not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/v1/", include("apps.submissions.api_urls")),
    path("api/v1/", include("apps.submissions.export_urls")),
    path("api/v1/", include("apps.leaderboard.api_urls")),
    path("api/v1/", include("apps.devices.api_urls")),
    # Last of the API: an unknown API path answers in the API's error shape, not with an HTML page.
    re_path(r"^api/", api_not_found),
    path("accounts/", include("django.contrib.auth.urls")),
    path("leaderboard/", include("apps.leaderboard.urls")),
    path("staff/", include("apps.devices.urls")),
    path("", include("apps.submissions.urls")),
]

# DEBUG off: a 500 under /api/ answers in the API's error shape, elsewhere with templates/500.html.
handler500 = "apps.submissions.api_errors.server_error"
