"""Hardware pools and the runner machines that serve them."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class HardwarePool(models.Model):
    KIND_CPU = "cpu"
    KIND_GPU = "gpu"
    KIND_ANE = "ane"
    KIND_CHOICES = [(KIND_CPU, "CPU"), (KIND_GPU, "GPU"), (KIND_ANE, "Apple Neural Engine")]

    # `cpu`, GPU models in lower case (`h200`), Macs by chip (`m4-ane`).
    slug = models.SlugField(unique=True, max_length=40)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=8, choices=KIND_CHOICES)
    # Languages a runner of this pool can build and run (`cpp`, `cuda`, `triton`, `cupy`, `coreml`).
    languages = models.JSONField(default=list)
    # The evaluator's --device for this pool: `cpu` or `cuda`.
    device = models.CharField(max_length=8, default="cpu")
    description = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def queue(self) -> str:
        return f"pool.{self.slug}"


class Runner(models.Model):
    """One runner host's identity. Its secret is shown once and stored as a SHA-256 hash."""

    name = models.SlugField(unique=True, max_length=80)
    pool = models.ForeignKey(HardwarePool, on_delete=models.PROTECT, related_name="runners")
    secret_hash = models.CharField(max_length=64, unique=True)
    secret_prefix = models.CharField(max_length=12, blank=True)
    is_disabled = models.BooleanField(default=False)
    is_draining = models.BooleanField(default=False)
    drain_reason = models.CharField(max_length=300, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    host_info = models.JSONField(default=dict, blank=True)
    telemetry = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["pool__slug", "name"]

    def __str__(self) -> str:
        return self.name


class AuditLog(models.Model):
    """One admin action on a runner (or one the site took on its own, with no actor): who, what, why."""

    ACTION_DRAIN = "drain"
    ACTION_RESUME = "resume"
    ACTION_DISABLE = "disable"
    ACTION_ENABLE = "enable"
    ACTION_ROTATE = "rotate_secret"
    ACTION_AUTO_DRAIN = "auto_drain"
    ACTION_OFFLINE_REQUEUE = "offline_requeue"
    ACTION_CHOICES = [(ACTION_DRAIN, "Drain"), (ACTION_RESUME, "Resume"), (ACTION_DISABLE, "Disable"),
                      (ACTION_ENABLE, "Enable"), (ACTION_ROTATE, "Rotate secret"),
                      (ACTION_AUTO_DRAIN, "Drained by calibration"),
                      (ACTION_OFFLINE_REQUEUE, "Job re-queued: runner offline")]

    created_at = models.DateTimeField(default=timezone.now)
    # Null: the site acted by itself (calibration outlier, offline runner).
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    runner = models.ForeignKey(Runner, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_log")
    runner_name = models.CharField(max_length=80, blank=True)  # kept when the runner row is deleted
    action = models.CharField(max_length=20, choices=ACTION_CHOICES)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The dashboard's "latest actions" list.
        indexes = [models.Index(fields=["-created_at"], name="devices_audit_recent")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action} {self.runner_name}"


class Calibration(models.Model):
    """A runner's measured ceilings (gpu_runner/calibration.py), one row per worker (GPU) per measurement."""

    runner = models.ForeignKey(Runner, on_delete=models.CASCADE, related_name="calibrations")
    # The worker it was measured for: `gpu0`, `gpu1` ... or `cpu0`.
    worker = models.CharField(max_length=20, default="")
    measured_at = models.DateTimeField(default=timezone.now)
    device_model = models.CharField(max_length=200)
    copy_bandwidth_gbps = models.FloatField()
    matmul_fp32_tflops = models.FloatField()
    # Null where the device has no fast bf16 path worth measuring (the cpu pool).
    matmul_bf16_tflops = models.FloatField(null=True, blank=True)
    reference_kernel_us = models.FloatField()
    versions = models.JSONField(default=dict, blank=True)
    # Per metric: the pool median it was compared with and how much slower it was, in percent.
    comparison = models.JSONField(default=dict, blank=True)
    is_outlier = models.BooleanField(default=False)

    class Meta:
        ordering = ["-measured_at", "-id"]
        # The latest calibration of each runner of a pool (the median's inputs).
        indexes = [models.Index(fields=["runner", "-measured_at"], name="devices_calib_latest")]

    def __str__(self) -> str:
        return f"{self.runner_id} {self.worker} {self.measured_at:%Y-%m-%d %H:%M}"
