"""Writes on pools and runners."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.devices import signals
from apps.devices.authentication import runner_secret_hash
from apps.devices.models import AuditLog, Calibration, HardwarePool, Runner

# What a runner of each kind of pool can build and run, by default.
POOL_DEFAULTS = {
    HardwarePool.KIND_CPU: {"device": "cpu", "languages": ["cpp"]},
    HardwarePool.KIND_GPU: {"device": "cuda", "languages": ["cuda", "triton", "cupy"]},
    HardwarePool.KIND_ANE: {"device": "ane", "languages": ["coreml"]},
}


def pool_kind_for_slug(slug: str) -> str:
    if slug == "cpu":
        return HardwarePool.KIND_CPU
    if slug.endswith("-ane"):
        return HardwarePool.KIND_ANE
    return HardwarePool.KIND_GPU


def pool_get_or_create(*, slug: str, name: str = "") -> tuple[HardwarePool, bool]:
    """The pool of this slug; a new one gets the defaults of its kind (cpu, a GPU model, `<chip>-ane`)."""
    pool = HardwarePool.objects.filter(slug=slug).first()
    if pool is not None:
        return pool, False
    kind = pool_kind_for_slug(slug)
    pool = HardwarePool(slug=slug, name=name or slug.upper(), kind=kind, **POOL_DEFAULTS[kind])
    pool.full_clean()
    pool.save()
    return pool, True


def _new_secret() -> tuple[str, str]:
    secret = "khr_" + secrets.token_urlsafe(32)
    return secret, runner_secret_hash(secret)


@transaction.atomic
def runner_create(*, name: str, pool: HardwarePool) -> tuple[Runner, str]:
    """A runner identity; the secret is returned once and only its hash is kept."""
    secret, digest = _new_secret()
    runner = Runner(name=name, pool=pool, secret_hash=digest, secret_prefix=secret[:10])
    runner.full_clean()
    runner.save()
    return runner, secret


def runner_rotate_secret(*, runner: Runner) -> str:
    """A new secret; the old one stops working at once."""
    secret, digest = _new_secret()
    Runner.objects.filter(pk=runner.pk).update(secret_hash=digest, secret_prefix=secret[:10])
    runner.refresh_from_db()
    return secret


def runner_heartbeat(*, runner: Runner, host_info: dict[str, Any], telemetry: dict[str, Any]) -> Runner:
    Runner.objects.filter(pk=runner.pk).update(last_heartbeat_at=timezone.now(), host_info=host_info,
                                               telemetry=telemetry)
    runner.refresh_from_db()
    return runner


def runner_config(*, runner: Runner) -> dict[str, Any]:
    """What `python -m gpu_runner serve` needs to start its workers."""
    soft = settings.JOB_SOFT_TIME_LIMIT_S
    return {
        "name": runner.name,
        "pool": runner.pool.slug,
        "queue": runner.pool.queue,
        "device": runner.pool.device,
        "languages": runner.pool.languages,
        "broker_url": settings.RUNNER_BROKER_URL,
        "visibility_timeout_s": settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"],
        "soft_time_limit_s": soft,
        "time_limit_s": int(soft * 1.2),
        "keepalive_s": settings.JOB_KEEPALIVE_S,
        "heartbeat_s": settings.RUNNER_HEARTBEAT_S,
        "is_draining": runner.is_draining,
        "is_disabled": runner.is_disabled,
    }


# --- Admin actions (the staff dashboard), each written to the audit log ------------------------------------

def audit_record(*, action: str, runner: Runner | None, actor: Any = None, detail: str = "") -> AuditLog:
    entry = AuditLog(action=action, runner=runner, runner_name=runner.name if runner else "",
                     actor=actor if getattr(actor, "is_authenticated", False) else None, detail=detail[:5000])
    entry.full_clean()
    entry.save()
    return entry


def _control_outcome(command: str, replies: dict[str, Any] | None, error: str = "") -> str:
    if error:
        return f"{command} not sent ({error})"
    if not replies:
        return (f"{command}: no worker of this runner answered (offline? serve applies the drain flag from its "
                f"next heartbeat)")
    return f"{command} sent to " + ", ".join(sorted(replies))


def runner_drain(*, runner: Runner, actor: Any = None, reason: str, action: str = AuditLog.ACTION_DRAIN) -> str:
    """Its workers stop taking jobs from the pool's queue (the job in hand finishes). Returns what was done."""
    from apps.devices import control

    Runner.objects.filter(pk=runner.pk).update(is_draining=True, drain_reason=reason[:300])
    runner.refresh_from_db()
    try:
        outcome = _control_outcome("cancel_consumer",
                                   control.runner_stop_consuming(runner_name=runner.name, queue=runner.pool.queue))
    except control.ControlError as e:
        outcome = _control_outcome("cancel_consumer", None, str(e))
    audit_record(action=action, runner=runner, actor=actor, detail=f"{reason}; {outcome}")
    return outcome


def runner_resume(*, runner: Runner, actor: Any = None) -> str:
    """Its workers take jobs again."""
    from apps.devices import control

    previous = runner.drain_reason
    Runner.objects.filter(pk=runner.pk).update(is_draining=False, drain_reason="")
    runner.refresh_from_db()
    try:
        outcome = _control_outcome("add_consumer",
                                   control.runner_start_consuming(runner_name=runner.name, queue=runner.pool.queue))
    except control.ControlError as e:
        outcome = _control_outcome("add_consumer", None, str(e))
    detail = f"was drained for: {previous}; {outcome}" if previous else outcome
    audit_record(action=AuditLog.ACTION_RESUME, runner=runner, actor=actor, detail=detail)
    return outcome


def runner_disable(*, runner: Runner, actor: Any = None) -> str:
    """Its secret is refused from now on; its workers stop consuming and its running jobs go back to the queue
    at once (their tokens rotate, so a late result from it is refused too)."""
    from apps.devices import control

    Runner.objects.filter(pk=runner.pk).update(is_disabled=True)
    runner.refresh_from_db()
    try:
        outcome = _control_outcome("cancel_consumer",
                                   control.runner_stop_consuming(runner_name=runner.name, queue=runner.pool.queue))
    except control.ControlError as e:
        outcome = _control_outcome("cancel_consumer", None, str(e))
    # The submissions app takes the runner's running jobs back (apps/submissions/lifecycle.py answers the signal).
    replies = signals.runner_disabled.send(sender=Runner, runner=runner,
                                           reason=f"runner {runner.name} was disabled by an admin")
    moved: list[Any] = [reply for _receiver, reply in replies]
    requeued = sum(n for n in moved if isinstance(n, int))
    audit_record(action=AuditLog.ACTION_DISABLE, runner=runner, actor=actor,
                 detail=f"{outcome}; {requeued} running job(s) re-queued")
    return outcome


def runner_enable(*, runner: Runner, actor: Any = None) -> None:
    Runner.objects.filter(pk=runner.pk).update(is_disabled=False)
    runner.refresh_from_db()
    audit_record(action=AuditLog.ACTION_ENABLE, runner=runner, actor=actor,
                 detail="its secret works again; restart `python -m gpu_runner serve` on the host")


def runner_rotate_secret_audited(*, runner: Runner, actor: Any = None) -> str:
    secret = runner_rotate_secret(runner=runner)
    audit_record(action=AuditLog.ACTION_ROTATE, runner=runner, actor=actor,
                 detail=f"new secret {runner.secret_prefix}...; the old one is refused from now on")
    return secret


# --- Calibration ------------------------------------------------------------------------------------------

# Each measured ceiling, and whether more is better (throughputs) or less (a time).
CALIBRATION_METRICS = {
    "copy_bandwidth_gbps": ("copy bandwidth", "GB/s", True),
    "matmul_fp32_tflops": ("fp32 matmul (TF32 off)", "TFLOP/s", True),
    "matmul_bf16_tflops": ("bf16 matmul", "TFLOP/s", True),
    "reference_kernel_us": ("reference kernel", "us", False),
}


CALIBRATION_PEER_MAX_AGE_DAYS = 7


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _pool_latest_calibrations(*, pool: HardwarePool, exclude_runner: Runner) -> list[Calibration]:
    """The latest calibration of each worker of the pool's other enabled runners."""
    latest: dict[tuple[int, str], Calibration] = {}
    # A peer silent for longer than this is no reference any more (and old rows need not be read).
    since = timezone.now() - timedelta(days=CALIBRATION_PEER_MAX_AGE_DAYS)
    rows = (Calibration.objects.filter(runner__pool=pool, runner__is_disabled=False, measured_at__gte=since)
            .exclude(runner=exclude_runner).order_by("-measured_at", "-id"))
    for row in rows:
        latest.setdefault((row.runner_id, row.worker), row)
    return list(latest.values())


def calibration_compare(*, values: dict[str, float | None], others: list[Calibration]) -> dict[str, Any]:
    """Per metric: the pool median and how much slower this one is, in percent (negative: faster)."""
    comparison: dict[str, Any] = {}
    for key, (_label, _unit, more_is_better) in CALIBRATION_METRICS.items():
        value = values.get(key)
        peers = [v for v in (getattr(row, key) for row in others) if v is not None and v > 0]
        if value is None or not peers:
            continue
        median = _median(peers)
        # "Slower" as a time ratio either way: half the bandwidth is 100% slower.
        slower = (median / value - 1) if more_is_better else (value / median - 1)
        comparison[key] = {"median": round(median, 4), "slower_pct": round(100 * slower, 2), "peers": len(peers)}
    return comparison


def calibration_record(*, runner: Runner, worker: str, device_model: str, copy_bandwidth_gbps: float,
                       matmul_fp32_tflops: float, matmul_bf16_tflops: float | None, reference_kernel_us: float,
                       versions: dict[str, Any]) -> Calibration:
    """Stores a runner's measured ceilings and compares them with the pool's median (the latest calibration of
    every other enabled runner's workers); more than CALIBRATION_OUTLIER_PCT slower on any ceiling drains the
    runner, with the reason on the dashboard and in the audit log."""
    values = {"copy_bandwidth_gbps": copy_bandwidth_gbps, "matmul_fp32_tflops": matmul_fp32_tflops,
              "matmul_bf16_tflops": matmul_bf16_tflops, "reference_kernel_us": reference_kernel_us}
    others = _pool_latest_calibrations(pool=runner.pool, exclude_runner=runner)
    comparison = calibration_compare(values=values, others=others)
    limit = settings.CALIBRATION_OUTLIER_PCT
    slow = [key for key, c in comparison.items() if c["slower_pct"] > limit]
    calibration = Calibration(runner=runner, worker=worker, device_model=device_model, versions=versions,
                              comparison=comparison, is_outlier=bool(slow), **values)
    calibration.full_clean()
    calibration.save()
    if slow:
        parts = []
        for key in slow:
            label, unit, _ = CALIBRATION_METRICS[key]
            parts.append(f"{label} {values[key]:.4g} {unit} is {comparison[key]['slower_pct']:.1f}% slower than "
                         f"the pool median {comparison[key]['median']:.4g} {unit}")
        reason = f"calibration of {worker or 'the host'}: " + "; ".join(parts) + f" (limit {limit}%)"
        runner_drain(runner=runner, reason=reason, action=AuditLog.ACTION_AUTO_DRAIN)
    return calibration
