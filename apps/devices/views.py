"""The staff dashboard: pools, their runners and queue depth; drain, resume, disable, enable, rotate a secret."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.devices import selectors, services
from apps.devices.models import Runner

ACTIONS = ("drain", "resume", "disable", "enable", "rotate")


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous visitors go to the login page; signed-in non-staff get a 403."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("The runner dashboard is for staff.")
        return view(request, *args, **kwargs)

    return wrapped


def _dashboard(request: HttpRequest, *, new_secret: str = "", new_secret_runner: Runner | None = None,
               status: int = 200) -> HttpResponse:
    return render(request, "devices/dashboard.html", {
        "pools": selectors.pool_rows(),
        "audit": selectors.audit_recent(limit=50),
        "new_secret": new_secret,
        "new_secret_runner": new_secret_runner,
    }, status=status)


@require_GET
@staff_required
def dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request)


@require_POST
@staff_required
def runner_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    runner = get_object_or_404(Runner.objects.select_related("pool"), name=name)
    if action not in ACTIONS:
        messages.error(request, f"Unknown action {action!r}: use one of {', '.join(ACTIONS)}.")
        return redirect("devices-dashboard")
    actor = request.user
    if action == "drain":
        reason = (request.POST.get("reason") or "").strip() or f"drained by {actor.get_username()}"
        outcome = services.runner_drain(runner=runner, actor=actor, reason=reason)
        messages.success(request, f"{runner.name} is draining: it finishes its job and takes no other ({outcome}).")
    elif action == "resume":
        outcome = services.runner_resume(runner=runner, actor=actor)
        messages.success(request, f"{runner.name} takes jobs again ({outcome}).")
    elif action == "disable":
        outcome = services.runner_disable(runner=runner, actor=actor)
        messages.success(request, f"{runner.name} is disabled: its secret is refused and its jobs went back to the "
                                  f"queue ({outcome}).")
    elif action == "enable":
        services.runner_enable(runner=runner, actor=actor)
        messages.success(request, f"{runner.name} is enabled: restart `python -m gpu_runner serve` on its host.")
    else:
        # Shown in this response only, never stored in clear: no redirect, or it would be lost.
        secret = services.runner_rotate_secret_audited(runner=runner, actor=actor)
        return _dashboard(request, new_secret=secret, new_secret_runner=runner)
    return redirect("devices-dashboard")
