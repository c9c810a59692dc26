"""Django admin for hardware pools and runners.

A runner's secret is shown once by `manage.py create_runner`; here only its hash and prefix, read-only.
Draining a runner for real (stopping its Celery consumer) is the staff dashboard's job; the flags here are
what the runner reads from /api/v1/runners/me/.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from apps.devices import services
from apps.devices.models import AuditLog, Calibration, HardwarePool, Runner


@admin.register(HardwarePool)
class HardwarePoolAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "kind", "device", "language_list", "queue", "is_active")
    list_filter = ("kind", "device", "is_active")
    search_fields = ("slug", "name")
    readonly_fields = ("queue", "created_at")

    @admin.display(description="Languages")
    def language_list(self, obj: HardwarePool) -> str:
        return ", ".join(obj.languages or [])


@admin.register(Runner)
class RunnerAdmin(admin.ModelAdmin):
    list_display = ("name", "pool", "online", "last_heartbeat_at", "is_draining", "is_disabled", "secret_prefix")
    list_filter = ("pool", "is_draining", "is_disabled")
    search_fields = ("name", "secret_prefix")
    list_select_related = ("pool",)
    readonly_fields = ("secret_hash", "secret_prefix", "last_heartbeat_at", "host_info", "telemetry", "created_at")
    actions = ["drain", "resume", "disable", "enable"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A runner's secret must be shown once to whoever installs it: `manage.py create_runner` does that.
        return False

    @admin.display(boolean=True, description="Online")
    def online(self, obj: Runner) -> bool:
        if obj.last_heartbeat_at is None:
            return False
        return timezone.now() - obj.last_heartbeat_at < timedelta(seconds=settings.RUNNER_OFFLINE_AFTER_S)

    @admin.action(description="Drain: finish the current job, take no other")
    def drain(self, request: HttpRequest, queryset: QuerySet[Runner]) -> None:
        for runner in queryset.select_related("pool"):
            services.runner_drain(runner=runner, actor=request.user, reason=f"drained by {request.user} (admin)")
        self.message_user(request, f"Draining {queryset.count()} runner(s); the audit log says which workers got it.")

    @admin.action(description="Resume: take jobs again")
    def resume(self, request: HttpRequest, queryset: QuerySet[Runner]) -> None:
        for runner in queryset.select_related("pool"):
            services.runner_resume(runner=runner, actor=request.user)
        self.message_user(request, f"Resumed {queryset.count()} runner(s).")

    @admin.action(description="Disable: its secret stops working")
    def disable(self, request: HttpRequest, queryset: QuerySet[Runner]) -> None:
        # Through the service: the audit log, the workers' consumers cancelled, running jobs re-queued.
        for runner in queryset.select_related("pool"):
            services.runner_disable(runner=runner, actor=request.user)
        self.message_user(request, f"Disabled {queryset.count()} runner(s): their API calls are now refused.")

    @admin.action(description="Enable")
    def enable(self, request: HttpRequest, queryset: QuerySet[Runner]) -> None:
        for runner in queryset:
            services.runner_enable(runner=runner, actor=request.user)
        self.message_user(request, f"Enabled {queryset.count()} runner(s).")


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor", "action", "runner_name", "detail")
    list_filter = ("action",)
    search_fields = ("runner_name", "detail")
    list_select_related = ("actor",)

    # The log is a record: nobody edits or adds to it by hand.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditLog | None = None) -> bool:
        return False


@admin.register(Calibration)
class CalibrationAdmin(admin.ModelAdmin):
    list_display = ("runner", "worker", "measured_at", "device_model", "copy_bandwidth_gbps", "matmul_fp32_tflops",
                    "matmul_bf16_tflops", "reference_kernel_us", "is_outlier")
    list_filter = ("is_outlier", "runner__pool")
    list_select_related = ("runner",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # measured by runners (POST /api/v1/runners/calibration/)
