"""Hardware pools and the runner machines that serve them."""

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
