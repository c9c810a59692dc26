"""run_local's set-up (what `make run` does before starting the processes): pools, bundled problems, local
runners and example submissions; idempotent on a second run."""

from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from apps.devices.models import HardwarePool, Runner
from apps.submissions.management.commands.run_local import gpu_pool_slug
from apps.submissions.models import Problem, Submission


@pytest.mark.parametrize("name, slug", [
    ("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("Tesla T4", "t4"), ("NVIDIA L40S", "l40s"),
])
def test_the_gpu_pool_is_named_after_the_model(name, slug):
    assert gpu_pool_slug(name) == slug


def _setup() -> str:
    out = StringIO()
    call_command("run_local", "--setup-only", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_setup_is_complete_and_idempotent(db, embedded_redis):
    _setup()
    cpu_problems = sorted(p.stem.lower().replace("_", "-")
                          for p in (Path(settings.BASE_DIR) / "problems" / "cpu").rglob("*.py")
                          if not p.name.startswith("_"))
    assert HardwarePool.objects.filter(slug="cpu", kind="cpu").exists()
    assert sorted(Problem.objects.filter(pools__slug="cpu").values_list("slug", flat=True)) == cpu_problems
    assert Runner.objects.filter(name="local-cpu", pool__slug="cpu").exists()
    examples = [p for p in (Path(settings.BASE_DIR) / "examples" / "cpu" / "cpp").glob("*.py")
                if Problem.objects.filter(slug=p.stem.lower().replace("_", "-")).exists()]
    assert Submission.objects.filter(entrant__slug="kernelhub-examples", pool__slug="cpu").count() == len(examples)
    counts = (Problem.objects.count(), Submission.objects.count(), Runner.objects.count())
    second = _setup()
    assert "0 submitted" in second and "0 created" in second
    assert (Problem.objects.count(), Submission.objects.count(), Runner.objects.count()) == counts
