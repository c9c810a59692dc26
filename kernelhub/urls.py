from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/v1/", include("apps.submissions.api_urls")),
    path("api/v1/", include("apps.submissions.export_urls")),
    path("api/v1/", include("apps.leaderboard.api_urls")),
    path("api/v1/", include("apps.devices.api_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("leaderboard/", include("apps.leaderboard.urls")),
    path("staff/", include("apps.devices.urls")),
    path("", include("apps.submissions.urls")),
]
