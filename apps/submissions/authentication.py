"""`Authorization: Token <key>`: an entrant's API token, looked up by its SHA-256."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from apps.submissions.models import ApiToken, token_hash

# Writing last_used_at on every request would make each read a write; once a few minutes is enough to audit.
LAST_USED_RESOLUTION = timedelta(minutes=5)


class EntrantTokenAuthentication(BaseAuthentication):
    """request.user is the entrant's owner and request.auth the ApiToken (its entrant: request.auth.entrant)."""

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: send `Authorization: Token <your token>`.")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token has characters a token never has.") from None
        api_token = (ApiToken.objects.select_related("entrant__owner")
                     .filter(key_hash=token_hash(key), revoked_at__isnull=True).first())
        if api_token is None:
            raise exceptions.AuthenticationFailed(
                "Invalid or revoked token: ask the site's admin for a new one (manage.py create_entrant).")
        if not api_token.entrant.owner.is_active:
            raise exceptions.AuthenticationFailed("The account that owns this entrant is deactivated.")
        now = timezone.now()
        if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
        return api_token.entrant.owner, api_token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return self.keyword


class EntrantTokenScheme(OpenApiAuthenticationExtension):
    target_class = EntrantTokenAuthentication
    name = "EntrantToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <your token>`: an entrant's API token (manage.py create_entrant or the "
                               "API tokens page)."}
