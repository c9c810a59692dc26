"""Reads on pools and runners: the staff dashboard and `manage.py runners` show the same rows."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from apps.devices import signals
from apps.devices.models import AuditLog, Calibration, HardwarePool, Runner

STATUS_ONLINE, STATUS_BUSY, STATUS_DRAINING = "online", "busy", "draining"
STATUS_OFFLINE, STATUS_DISABLED = "offline", "disabled"


def runner_status(*, runner: Runner, now: datetime, busy: bool) -> str:
    """disabled > offline > draining > busy > online: the first that holds is what an operator must know."""
    if runner.is_disabled:
        return STATUS_DISABLED
    if runner.last_heartbeat_at is None or \
            (now - runner.last_heartbeat_at).total_seconds() > settings.RUNNER_OFFLINE_AFTER_S:
        return STATUS_OFFLINE
    if runner.is_draining:
        return STATUS_DRAINING
    return STATUS_BUSY if busy else STATUS_ONLINE


def telemetry_summary(telemetry: dict[str, Any]) -> str:
    """One line: workers alive, and per GPU its name, temperature, power, utilisation and SM clock."""
    parts = []
    workers = telemetry.get("workers") if isinstance(telemetry, dict) else None
    if isinstance(workers, list) and workers:
        alive = sum(1 for w in workers if isinstance(w, dict) and w.get("alive"))
        parts.append(f"{alive}/{len(workers)} workers alive")
    gpus = telemetry.get("gpus") if isinstance(telemetry, dict) else None
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, dict):
            continue
        readings = [str(gpu.get("name") or "GPU")]
        for key, unit in (("temperature_c", " C"), ("power_w", " W"), ("utilization_pct", "%"),
                          ("sm_clock_mhz", " MHz")):
            value = gpu.get(key)
            if isinstance(value, int | float):
                readings.append(f"{value:.0f}{unit}")
        throttle = gpu.get("throttle_reasons")
        if isinstance(throttle, int) and throttle & ~1:  # bit 0 is "idle": not worth an operator's look
            readings.append(f"throttle {throttle:#x}")
        parts.append(f"gpu{gpu.get('index', '?')} " + " ".join(readings))
    return "; ".join(parts) or "no telemetry"


def gpu_busy(*, runner: Runner) -> list[dict[str, Any]]:
    """Per GPU of a GPU runner, from its last heartbeat: the fraction of the heartbeat interval that the GPU ran
    kernels (gpu_runner/sysinfo.py gpu_busy: NVML's utilization samples over the interval) and the seconds its
    samples cover; `busy_fraction` None where the runner could not measure it. Empty for a CPU runner (its host's
    GPUs, if any, are not its device) and for a runner that sends no such reading: not measured."""
    if runner.pool.device != "cuda" or not isinstance(runner.telemetry, dict):
        return []
    gpus = runner.telemetry.get("gpus")
    out = []
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, dict) or "busy_fraction" not in gpu:
            continue
        fraction, window = gpu.get("busy_fraction"), gpu.get("busy_window_s")
        out.append({"gpu": gpu.get("index"),
                    "busy_fraction": fraction if isinstance(fraction, int | float) else None,
                    "window_s": window if isinstance(window, int | float) else None})
    return out


def gpu_busy_text(busy: list[dict[str, Any]], *, compact: bool = False) -> str:
    """`87%` for one GPU, `gpu0 87%, gpu1 12%` for several (compact: `87%,12%`), `-` where nothing was measured."""
    if not busy:
        return "-"
    parts = [("-" if b["busy_fraction"] is None else f"{100 * b['busy_fraction']:.0f}%") for b in busy]
    if len(busy) == 1 or compact:
        return ",".join(parts)
    return ", ".join(f"gpu{b['gpu']} {part}" for b, part in zip(busy, parts, strict=True))


def _latest_calibrations(runner_ids: list[int]) -> dict[int, list[Calibration]]:
    latest: dict[int, dict[str, Calibration]] = {}
    # The last 30 days are enough to show each worker's latest one (calibrations come every few hours).
    since = timezone.now() - timedelta(days=30)
    rows = Calibration.objects.filter(runner_id__in=runner_ids, measured_at__gte=since)
    for row in rows.order_by("-measured_at", "-id"):
        latest.setdefault(row.runner_id, {}).setdefault(row.worker, row)
    return {rid: sorted(rows.values(), key=lambda r: r.worker) for rid, rows in latest.items()}


def runner_rows(*, pool: HardwarePool | None = None) -> list[dict[str, Any]]:
    """Every runner with its status, seconds since its heartbeat, current job(s), telemetry, GPU busy fraction
    and calibration."""
    now = timezone.now()
    runners: QuerySet[Runner] = Runner.objects.select_related("pool")
    if pool is not None:
        runners = runners.filter(pool=pool)
    runner_list = list(runners)
    ids = [r.pk for r in runner_list]
    jobs = signals.running_jobs(ids)
    calibrations = _latest_calibrations(ids)
    rows = []
    for runner in runner_list:
        running = jobs.get(runner.pk, [])
        since = None if runner.last_heartbeat_at is None else int((now - runner.last_heartbeat_at).total_seconds())
        busy = gpu_busy(runner=runner)
        rows.append({
            "runner": runner,
            "name": runner.name,
            "pool": runner.pool.slug,
            "status": runner_status(runner=runner, now=now, busy=bool(running)),
            "seconds_since_heartbeat": since,
            "jobs": running,
            "current_job": [{"evaluation_id": j.evaluation_id, "problem": j.problem, "stage": j.stage,
                             "attempt": j.attempt} for j in running],
            "telemetry_summary": telemetry_summary(runner.telemetry),
            "gpu_busy": busy,
            "gpu_busy_text": gpu_busy_text(busy),
            "drain_reason": runner.drain_reason,
            "calibrations": calibrations.get(runner.pk, []),
        })
    return rows


def pool_rows(*, with_queue_depth: bool = True) -> list[dict[str, Any]]:
    """Pools with their runners (runner_rows) and, read from the broker, the depth of their queue."""
    from apps.devices import control

    by_pool: dict[int, list[dict[str, Any]]] = {}
    for row in runner_rows():
        by_pool.setdefault(row["runner"].pool_id, []).append(row)
    out = []
    for pool in HardwarePool.objects.all():
        out.append({"pool": pool, "queue": pool.queue, "runners": by_pool.get(pool.pk, []),
                    "queue_depth": control.queue_depth(pool.queue) if with_queue_depth else None})
    return out


def audit_recent(*, limit: int = 50) -> QuerySet[AuditLog]:
    return AuditLog.objects.select_related("actor")[:limit]
