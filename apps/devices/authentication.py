"""`Authorization: Runner <secret>`: a runner host, looked up by its secret's SHA-256."""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from apps.devices.models import Runner


def runner_secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class RunnerAuthentication(BaseAuthentication):
    """request.auth is the Runner; request.user stays anonymous (a runner is no person)."""

    keyword = "Runner"

    def authenticate(self, request: Request) -> tuple[AnonymousUser, Runner] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: send `Runner <secret>`.")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The runner secret has characters a secret never has.") \
                from None
        runner = Runner.objects.select_related("pool").filter(secret_hash=runner_secret_hash(secret)).first()
        if runner is None:
            raise exceptions.AuthenticationFailed(
                "Unknown runner secret: create the runner with `manage.py create_runner` and use the secret "
                "it printed (rotated secrets stop working at once).")
        if runner.is_disabled:
            raise exceptions.PermissionDenied(f"Runner {runner.name} is disabled by an admin.")
        return AnonymousUser(), runner

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class IsRunner(BasePermission):
    message = "This endpoint is for runners: send `Authorization: Runner <secret>`."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, Runner)


class RunnerSecretScheme(OpenApiAuthenticationExtension):
    target_class = RunnerAuthentication
    name = "RunnerSecret"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Runner <secret>`: a runner's secret (manage.py create_runner)."}
