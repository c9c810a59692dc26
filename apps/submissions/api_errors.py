"""Placeholder: the API's one error shape (filled in with the API)."""

from rest_framework.views import exception_handler as drf_exception_handler

exception_handler = drf_exception_handler
