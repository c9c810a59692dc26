"""`manage.py runners --json`: pool, status, seconds since the heartbeat, current job, telemetry summary."""

import json
from datetime import timedelta
from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from apps.devices.models import HardwarePool, Runner
from apps.devices.services import runner_create, runner_drain
from tests.devices.helpers import claimed_job, heartbeat


def _runners_json() -> dict[str, dict]:
    out = StringIO()
    call_command("runners", "--json", stdout=out)
    return {row["name"]: row for row in json.loads(out.getvalue())}


def test_it_reports_each_status(problem, alice, runners, api, redis_queue, django_capture_on_commit_callbacks):
    gpu = {"index": 0, "name": "NVIDIA H200", "temperature_c": 40}
    for name in ("cpu-1", "cpu-2", "h200-1"):
        heartbeat(api, runners[name].secret, gpus=[gpu] if name == "h200-1" else [])
    evaluation, _job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                   capture=django_capture_on_commit_callbacks, runner="cpu-1")
    runner_drain(runner=runners["cpu-2"].runner, reason="new fans")
    Runner.objects.filter(name="h200-1").update(last_heartbeat_at=timezone.now() - timedelta(seconds=500))
    disabled, _ = runner_create(name="cpu-3", pool=HardwarePool.objects.get(slug="cpu"))
    Runner.objects.filter(pk=disabled.pk).update(is_disabled=True)
    never, _ = runner_create(name="cpu-4", pool=HardwarePool.objects.get(slug="cpu"))

    rows = _runners_json()
    assert {name: row["status"] for name, row in rows.items()} == {
        "cpu-1": "busy", "cpu-2": "draining", "h200-1": "offline", "cpu-3": "disabled", "cpu-4": "offline"}
    assert rows["cpu-1"]["current_job"] == [{"evaluation_id": evaluation.pk, "problem": "add-one-cpu",
                                            "stage": "queued", "attempt": 1}]
    assert rows["cpu-1"]["pool"] == "cpu" and rows["h200-1"]["pool"] == "h200"
    assert 0 <= rows["cpu-1"]["seconds_since_heartbeat"] < 60
    assert 499 <= rows["h200-1"]["seconds_since_heartbeat"] < 560
    assert rows["cpu-4"]["seconds_since_heartbeat"] is None
    assert rows["cpu-2"]["drain_reason"] == "new fans" and rows["cpu-2"]["is_draining"] is True
    assert "gpu0 NVIDIA H200 40 C" in rows["h200-1"]["telemetry_summary"]


def test_it_prints_a_table_for_people(runners, api):
    heartbeat(api, runners["cpu-1"].secret)
    out = StringIO()
    call_command("runners", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:4] == ["RUNNER", "POOL", "STATUS", "HEARTBEAT"]
    cpu1 = next(line for line in lines if line.startswith("cpu-1 "))
    assert cpu1.split()[1:3] == ["cpu", "online"]
    assert next(line for line in lines if line.startswith("cpu-2 ")).split()[2:4] == ["offline", "never"]


def test_it_says_how_to_create_one_when_there_are_none(db):
    out = StringIO()
    call_command("runners", stdout=out)
    assert "create_runner" in out.getvalue()
