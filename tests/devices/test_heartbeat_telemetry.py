"""POST /api/v1/runners/heartbeat/ with NVML telemetry: stored as sent, summarised for operators."""

from apps.devices.selectors import runner_rows
from tests.devices.helpers import heartbeat

GPUS = [{"index": 0, "name": "NVIDIA H200", "temperature_c": 41, "power_w": 118.5, "utilization_pct": 97,
         "sm_clock_mhz": 1980, "memory_used_mib": 1024, "memory_total_mib": 143771, "throttle_reasons": 1,
         "driver_version": "570.124.06", "cuda_driver_version": "12.8"},
        {"index": 1, "name": "NVIDIA H200", "temperature_c": 38, "power_w": 75.0, "utilization_pct": 0,
         "sm_clock_mhz": 345, "throttle_reasons": 0x24}]
WORKERS = [{"label": "gpu0", "alive": True, "cuda_visible_devices": "0"},
           {"label": "gpu1", "alive": False, "cuda_visible_devices": "1"}]


def test_it_stores_host_info_and_telemetry(runners, api):
    answer = heartbeat(api, runners["h200-1"].secret, gpus=GPUS, workers=WORKERS)
    assert answer["name"] == "h200-1" and answer["is_draining"] is False
    runner = runners["h200-1"].runner
    runner.refresh_from_db()
    assert runner.telemetry["gpus"] == GPUS and runner.host_info == {"hostname": "node"}
    assert runner.last_heartbeat_at is not None


def test_it_summarises_telemetry_per_gpu(runners, api):
    heartbeat(api, runners["h200-1"].secret, gpus=GPUS, workers=WORKERS)
    row = next(r for r in runner_rows() if r["name"] == "h200-1")
    assert row["status"] == "online" and row["seconds_since_heartbeat"] is not None
    summary = row["telemetry_summary"]
    assert summary.startswith("1/2 workers alive")
    assert "gpu0 NVIDIA H200 41 C 118 W 97% 1980 MHz;" in summary  # idle bit: not shown
    assert "gpu1 NVIDIA H200 38 C 75 W 0% 345 MHz throttle 0x24" in summary


def test_it_tells_a_drained_runner_so(runners, api):
    from apps.devices.services import runner_drain

    runner_drain(runner=runners["cpu-1"].runner, reason="maintenance")
    assert heartbeat(api, runners["cpu-1"].secret)["is_draining"] is True
