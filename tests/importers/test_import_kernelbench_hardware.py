"""By default the suite is offered on every active GPU pool, or on the default pool where there is none."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.devices.models import HardwarePool
from apps.submissions.models import Problem
from tests.importers.conftest import kernelbench_tree


def pools_of(slug: str) -> set[str]:
    return set(Problem.objects.get(slug=slug).pools.values_list("slug", flat=True))


def test_it_offers_the_suite_on_every_active_gpu_pool(pools, tmp_path):
    HardwarePool.objects.create(slug="h100", name="H100", kind="gpu", device="cuda", languages=["cuda"])
    HardwarePool.objects.create(slug="a100", name="A100", kind="gpu", device="cuda", languages=["cuda"],
                                is_active=False)
    call_command("import_kernelbench", str(kernelbench_tree(tmp_path)), stdout=StringIO(), stderr=StringIO())
    assert pools_of("l1-19-relu") == {"h200", "h100"}


def test_it_falls_back_to_the_default_pool_without_gpu_pools(pools, tmp_path, settings):
    pools["h200"].delete()
    settings.DEFAULT_HARDWARE_POOL = "cpu"
    call_command("import_kernelbench", str(kernelbench_tree(tmp_path)), stdout=StringIO(), stderr=StringIO())
    assert pools_of("l3-1-mlp") == {"cpu"}


def test_it_uses_the_pools_named_and_refuses_unknown_ones(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    call_command("import_kernelbench", str(root), "--hardware", "cpu", "--hardware", "h200",
                 stdout=StringIO(), stderr=StringIO())
    assert pools_of("l1-19-relu") == {"cpu", "h200"}
    with pytest.raises(CommandError, match="Unknown hardware pool tpu; the pools are: cpu, h200"):
        call_command("import_kernelbench", str(root), "--hardware", "tpu", stdout=StringIO(), stderr=StringIO())
