"""manage.py create_runner prints the runner's secret as the last line; the pool is made if new."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.devices.authentication import runner_secret_hash
from apps.devices.models import HardwarePool, Runner


def test_it_creates_the_pool_and_prints_a_working_secret(db, api):
    out = StringIO()
    call_command("create_runner", "--name", "node-1", "--pool", "h100", stdout=out)
    secret = out.getvalue().strip().splitlines()[-1]
    runner = Runner.objects.get(name="node-1")
    assert runner.secret_hash == runner_secret_hash(secret)
    pool = HardwarePool.objects.get(slug="h100")
    assert pool.kind == "gpu" and pool.device == "cuda" and "cuda" in pool.languages
    assert api(runner=secret).get("/api/v1/runners/me/").json()["queue"] == "pool.h100"


def test_it_refuses_a_taken_name(db):
    call_command("create_runner", "--name", "node-1", "--pool", "cpu", stdout=StringIO())
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_runner", "--name", "node-1", "--pool", "cpu", stdout=StringIO())
