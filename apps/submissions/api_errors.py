"""The API's one error shape, for every 4xx: {"error": {"code", "message", "fields": {...}}}."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from apps.submissions.services import JobRefused, SubmissionError

CODES = {
    exceptions.ParseError: "malformed_request",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
    exceptions.ValidationError: "invalid",
}


def error_response(message: str, *, code: str, status_code: int, fields: dict | None = None,
                   headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"code": code, "message": message, "fields": fields or {}}}
    return Response(body, status=status_code, headers=headers)


def _flatten(detail: Any) -> list[str]:
    if isinstance(detail, dict):
        return [f"{key}: {text}" for key, value in detail.items() for text in _flatten(value)]
    if isinstance(detail, list):
        return [text for item in detail for text in _flatten(item)]
    return [str(detail)]


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, SubmissionError):
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return error_response(exc.message, code=exc.code, status_code=exc.status, fields=exc.fields,
                              headers=headers)
    if isinstance(exc, JobRefused):
        return error_response(exc.message, code=exc.code, status_code=exc.status)
    if isinstance(exc, RequestDataTooBig):
        # Django refuses the body before any view can say why: a package in JSON is a third larger as base64.
        return error_response(
            f"The request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes. A Core ML package may be at "
            f"most {settings.MAX_PACKAGE_BYTES:,} bytes zipped: send a smaller one (as base64 or as a multipart "
            "`package` part).", code="too_large", status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found: check the id or slug in the URL.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None  # a bug: Django's 500 handling logs it
    headers: dict[str, str] = {}
    # DRF's view sets auth_header (and keeps 401) when the view has an authenticator with a header.
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        headers["Retry-After"] = str(int(exc.wait) + 1)
    code = next((c for cls, c in CODES.items() if isinstance(exc, cls)), "error")
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail
        if isinstance(detail, dict):
            fields = {key: _flatten(value) for key, value in detail.items()}
            names = ", ".join(fields)
            message = f"Invalid input in: {names}." if names else "Invalid input."
            if list(fields) == ["non_field_errors"]:
                message = " ".join(fields["non_field_errors"])
        else:
            fields = {}
            message = " ".join(_flatten(detail)) or "Invalid input."
        return error_response(message, code=code, status_code=status.HTTP_400_BAD_REQUEST, fields=fields,
                              headers=headers)
    message = " ".join(_flatten(exc.detail))
    if isinstance(exc, exceptions.ParseError):
        message = f"The request body is not valid JSON ({message}). Send a JSON object with Content-Type: " \
                  "application/json."
    return error_response(message, code=code, status_code=exc.status_code, headers=headers)
