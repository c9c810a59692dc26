"""Calibrations posted through the API (values chosen by the test: that is the input) are compared with the
median of the pool's other runners; more than CALIBRATION_OUTLIER_PCT slower on any ceiling drains the runner,
with the reason stored, answered, audited and shown on the dashboard."""

import pytest

from apps.devices.models import AuditLog, Calibration, HardwarePool, Runner
from apps.devices.services import runner_create
from tests.devices.helpers import heartbeat

NORMAL = {"device_model": "NVIDIA H200", "copy_bandwidth_gbps": 4000.0, "matmul_fp32_tflops": 50.0,
          "matmul_bf16_tflops": 700.0, "reference_kernel_us": 200.0, "versions": {"torch": "2.13.0"}}


@pytest.fixture
def h200_runners(pools):
    """Four runners of the h200 pool: a pool median needs peers."""
    out = {}
    for i in range(1, 5):
        runner, secret = runner_create(name=f"h200-node-{i}", pool=pools["h200"])
        out[runner.name] = secret
    return out


def post(api, secret, **changes):
    body = {**NORMAL, "worker": "gpu0", **changes}
    return api(runner=secret).post("/api/v1/runners/calibration/", body, format="json")


def _peers(api, h200_runners, count=3):
    # Peers a little apart, so the median is a real median: 3960, 4000, 4040 GB/s.
    for i, name in enumerate(list(h200_runners)[:count]):
        assert post(api, h200_runners[name], copy_bandwidth_gbps=3960.0 + 40 * i).status_code == 201


def test_the_first_runner_of_a_pool_has_nothing_to_compare_with(api, h200_runners):
    response = post(api, h200_runners["h200-node-1"])
    assert response.status_code == 201
    assert response.json()["is_outlier"] is False and response.json()["comparison"] == {}


def test_a_runner_slower_than_the_pool_median_is_drained(api, h200_runners, staff_client, settings):
    _peers(api, h200_runners)
    heartbeat(api, h200_runners["h200-node-4"])
    # 3600 GB/s against a median of 4000: 11.1% slower.
    response = post(api, h200_runners["h200-node-4"], copy_bandwidth_gbps=3600.0, worker="gpu1")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["is_outlier"] is True and body["is_draining"] is True
    assert body["comparison"]["copy_bandwidth_gbps"] == {"median": 4000.0, "slower_pct": 11.11, "peers": 3}
    assert body["comparison"]["matmul_fp32_tflops"]["slower_pct"] == 0.0
    runner = Runner.objects.get(name="h200-node-4")
    assert runner.is_draining
    assert runner.drain_reason.startswith("calibration of gpu1: copy bandwidth 3600 GB/s is 11.1% slower than "
                                          "the pool median 4000 GB/s")
    entry = AuditLog.objects.get(action=AuditLog.ACTION_AUTO_DRAIN)
    assert entry.runner == runner and entry.actor is None and "11.1% slower" in entry.detail
    page = staff_client.get("/staff/").content.decode()
    assert "11.1% slower than the pool median 4000 GB/s" in page and ">draining<" in page
    assert "Drained by calibration" in page


def test_a_slower_reference_kernel_drains_too(api, h200_runners):
    _peers(api, h200_runners)
    body = post(api, h200_runners["h200-node-4"], reference_kernel_us=212.0).json()  # 6% slower
    assert body["is_outlier"] is True and "reference kernel 212 us is 6.0% slower" in body["drain_reason"]


def test_within_the_limit_nothing_happens(api, h200_runners, settings):
    _peers(api, h200_runners)
    body = post(api, h200_runners["h200-node-4"], copy_bandwidth_gbps=3820.0, matmul_bf16_tflops=670.0).json()
    assert body["is_outlier"] is False and body["is_draining"] is False
    assert 0 < body["comparison"]["copy_bandwidth_gbps"]["slower_pct"] <= settings.CALIBRATION_OUTLIER_PCT
    assert not AuditLog.objects.exists()
    # A faster runner is never an outlier.
    assert post(api, h200_runners["h200-node-4"], matmul_fp32_tflops=60.0).json()["is_outlier"] is False


def test_only_the_latest_calibration_of_each_peer_counts(api, h200_runners):
    _peers(api, h200_runners, count=1)
    # Node 1 was slow once, then fixed: the fixed figure is the one compared with.
    assert post(api, h200_runners["h200-node-1"], copy_bandwidth_gbps=2000.0).json()["is_outlier"] is False
    assert post(api, h200_runners["h200-node-1"], copy_bandwidth_gbps=4000.0).status_code == 201
    body = post(api, h200_runners["h200-node-2"], copy_bandwidth_gbps=3900.0).json()
    assert body["comparison"]["copy_bandwidth_gbps"]["median"] == 4000.0 and body["is_outlier"] is False
    assert Calibration.objects.count() == 4


def test_a_malformed_calibration_is_a_400_that_names_the_fields(api, h200_runners):
    response = post(api, h200_runners["h200-node-1"], copy_bandwidth_gbps=-1, worker="gpu zero")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert set(fields) == {"copy_bandwidth_gbps", "worker"}
    assert not Calibration.objects.exists()


def test_a_disabled_peer_is_not_part_of_the_median(api, h200_runners):
    _peers(api, h200_runners, count=1)
    Runner.objects.filter(name="h200-node-1").update(is_disabled=True)
    body = post(api, h200_runners["h200-node-2"], copy_bandwidth_gbps=1000.0).json()
    assert body["comparison"] == {} and body["is_outlier"] is False
    assert HardwarePool.objects.get(slug="h200").runners.filter(is_draining=True).count() == 0


def test_a_peer_silent_for_a_week_is_no_reference(api, h200_runners):
    from datetime import timedelta

    from django.utils import timezone

    _peers(api, h200_runners, count=1)
    Calibration.objects.update(measured_at=timezone.now() - timedelta(days=8))
    body = post(api, h200_runners["h200-node-2"], copy_bandwidth_gbps=1000.0).json()
    assert body["comparison"] == {} and body["is_outlier"] is False
