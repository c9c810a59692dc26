"""The API's one error shape, for every error, 5xx included: {"error": {"code", "message", "fields": {...}}}."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from apps.submissions.api_parsers import JsonTooDeep
from apps.submissions.lifecycle import JobRefused
from apps.submissions.services import SubmissionError

# Django's own logger of 500s: its handlers (console, admins' mail) see an API's failure as they see a page's.
request_logger = logging.getLogger("django.request")

CODES = {
    JsonTooDeep: "too_deep",
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
        return error_response(exc.message, code=exc.code, status_code=exc.status, fields=exc.fields,
                              headers={"Retry-After": str(exc.retry_after)} if exc.retry_after else None)
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
        # A bug: logged with its traceback as Django logs a 500, answered in the API's shape (never the debug page,
        # which shows server paths and settings to whoever sent the request).
        request = context.get("request")
        path = getattr(request, "path", "?")
        request_logger.error("Internal Server Error: %s", path, exc_info=(type(exc), exc, exc.__traceback__),
                             extra={"status_code": 500, "request": getattr(request, "_request", request)})
        set_rollback()
        return error_response("The server failed on this request; it was logged. Try again later, and report it "
                              "if it persists.", code="server_error",
                              status_code=status.HTTP_500_INTERNAL_SERVER_ERROR)
    headers: dict[str, str] = {}
    # DRF's view sets auth_header (and keeps 401) when the view has an authenticator with a header.
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
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
    if isinstance(exc, exceptions.ParseError) and not isinstance(exc, JsonTooDeep):
        message = f"The request body is not valid JSON ({message}). Send a JSON object with Content-Type: " \
                  "application/json."
    return error_response(message, code=code, status_code=exc.status_code, headers=headers)


def server_error(request: Any) -> Any:
    """Django's handler500 (DEBUG off): a failure outside a DRF view, under /api/, in the API's shape too."""
    from django.http import JsonResponse
    from django.views.defaults import server_error as page_server_error

    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": "server_error", "message": "The server failed on this request; it "
                                       "was logged. Try again later, and report it if it persists.", "fields": {}}},
                            status=500)
    return page_server_error(request)
