"""Placeholder: token authentication for entrants (filled in with the API)."""

from rest_framework.authentication import BaseAuthentication


class EntrantTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):  # type: ignore[no-untyped-def]
        return None
