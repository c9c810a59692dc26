"""HTTP and websockets. Each app lists its websocket routes in its routing.py."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from apps.leaderboard.routing import websocket_urlpatterns as leaderboard_ws  # noqa: E402
from apps.submissions.routing import websocket_urlpatterns as submissions_ws  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(submissions_ws + leaderboard_ws))),
    }
)
