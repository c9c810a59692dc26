"""Writes on pools and runners."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.devices.authentication import runner_secret_hash
from apps.devices.models import HardwarePool, Runner

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
