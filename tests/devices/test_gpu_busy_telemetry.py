"""The GPU's busy fraction over the last heartbeat interval: sent in the heartbeat's telemetry, stored, shown on
the staff dashboard and by `manage.py runners`; a CPU runner shows "-" (not measured), never a number."""

import json
from io import StringIO

from django.core.management import call_command

from apps.devices.models import Runner
from gpu_runner import sysinfo
from gpu_runner.worker import gpu_telemetry
from tests.devices.helpers import heartbeat

# What serve sends from an H200 host: sysinfo.gpu_busy over the 30 s since the previous heartbeat.
BUSY_GPU = {"index": 0, "name": "NVIDIA H200", "utilization_pct": 100, "busy_fraction": 0.8734,
            "busy_window_s": 29.8, "busy_samples": 179}


def _runners() -> tuple[dict[str, dict], list[str]]:
    out = StringIO()
    call_command("runners", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    table = StringIO()
    call_command("runners", stdout=table)
    return rows, table.getvalue().splitlines()


def test_it_stores_and_shows_the_busy_fraction_of_a_gpu_runner(runners, api, staff_client):
    heartbeat(api, runners["h200-1"].secret, gpus=[BUSY_GPU], workers=[])
    runner = Runner.objects.get(name="h200-1")
    assert runner.telemetry["gpus"][0]["busy_fraction"] == 0.8734
    assert runner.telemetry["gpus"][0]["busy_window_s"] == 29.8

    rows, table = _runners()
    assert rows["h200-1"]["gpu_busy"] == [{"gpu": 0, "busy_fraction": 0.8734, "window_s": 29.8}]
    assert table[0].split()[:7] == ["RUNNER", "POOL", "STATUS", "HEARTBEAT", "JOB", "BUSY", "TELEMETRY"]
    line = next(line for line in table if line.startswith("h200-1 "))
    assert line.split()[3:7] == ["0", "s", "-", "87%"]  # heartbeat 0 s ago, no job, 87% busy

    page = staff_client.get("/staff/").content.decode()
    cell = page.split('id="runner-h200-1"')[1].split('data-field="gpu-busy">')[1].split("</td>")[0]
    assert "87%" in cell and "over the last 30 s" in cell


def test_a_cpu_runner_shows_not_measured(runners, api, staff_client):
    # A CPU runner on a host with a GPU sends that GPU's readings: they are not its device's.
    heartbeat(api, runners["cpu-1"].secret, gpus=[BUSY_GPU], workers=[])
    heartbeat(api, runners["cpu-2"].secret, gpus=[], workers=[])
    rows, table = _runners()
    assert rows["cpu-1"]["gpu_busy"] == [] and rows["cpu-2"]["gpu_busy"] == []
    for name in ("cpu-1", "cpu-2"):
        assert next(line for line in table if line.startswith(f"{name} ")).split()[5:7] == ["-", "-"]
    page = staff_client.get("/staff/").content.decode()
    for name in ("cpu-1", "cpu-2"):
        cell = page.split(f'id="runner-{name}"')[1].split('data-field="gpu-busy">')[1].split("</td>")[0]
        assert "%" not in cell and 'title="not measured: a CPU runner">-<' in cell


def test_a_gpu_that_could_not_be_measured_shows_not_measured(runners, api, staff_client):
    unmeasured = {"index": 0, "name": "NVIDIA H200", "busy_fraction": None, "busy_window_s": None,
                  "busy_error": "Not Supported"}
    heartbeat(api, runners["h200-1"].secret, gpus=[unmeasured], workers=[])
    rows, table = _runners()
    assert rows["h200-1"]["gpu_busy"] == [{"gpu": 0, "busy_fraction": None, "window_s": None}]
    assert next(line for line in table if line.startswith("h200-1 ")).split()[6] == "-"
    page = staff_client.get("/staff/").content.decode()
    cell = page.split('id="runner-h200-1"')[1].split('data-field="gpu-busy">')[1].split("</td>")[0]
    assert "%" not in cell and "not measured on this GPU" in cell


def test_it_refuses_a_busy_fraction_outside_0_to_1(runners, api):
    response = api(runner=runners["h200-1"].secret).post(
        "/api/v1/runners/heartbeat/", {"telemetry": {"gpus": [{**BUSY_GPU, "busy_fraction": 87}]}}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "busy_fraction must be a number from 0 to 1" in json.dumps(error["fields"])
    assert Runner.objects.get(name="h200-1").last_heartbeat_at is None  # nothing stored


def test_without_a_gpu_the_runner_sends_no_busy_reading():
    # This machine has no GPU (a GPU host checks the reading itself: docs/RUNNERS.md).
    if sysinfo.gpu_snapshot().get("available"):
        import pytest

        pytest.skip("this machine has a GPU")
    assert sysinfo.gpu_busy() is None and sysinfo.gpu_busy(0) is None
    assert gpu_telemetry() == []


def test_the_busy_fraction_is_the_time_weighted_mean_of_the_samples_since_the_last_reading():
    period = 166_667  # us: an H100/H200 class GPU's utilization sample period (1/6 s)
    start = 1_764_547_200_000_000
    # 30 s after the last reading: busy (100%) for the first 12 s, idle for the rest.
    points = [(start + k * period, 100.0 if k <= 72 else 0.0) for k in range(1, 181)]
    reading = sysinfo.busy_from_samples(points, last_seen=start)
    assert reading["busy_samples"] == 180 and abs(reading["busy_window_s"] - 30.0) < 0.001
    assert reading["busy_fraction"] == round(72 / 180, 4)
    # The driver's buffer dropped the first 20 s: the window says so, nothing is stretched to 30 s.
    kept = points[120:]
    reading = sysinfo.busy_from_samples(kept, last_seen=start)
    assert abs(reading["busy_window_s"] - 60 * period / 1e6) < 0.001 and reading["busy_fraction"] == 0.0
    # Uneven periods weigh by time: 1 s at 90% and 0.5 s at 0% is 60%.
    assert sysinfo.busy_from_samples([(start + 1_000_000, 90.0), (start + 1_500_000, 0.0)],
                                     last_seen=start)["busy_fraction"] == 0.6
    # Nothing new, or a value NVML cannot mean: not measured.
    assert sysinfo.busy_from_samples([], last_seen=start)["busy_fraction"] is None
    assert sysinfo.busy_from_samples([(start + period, 250.0)], last_seen=start)["busy_fraction"] is None
