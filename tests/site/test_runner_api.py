"""GET /api/v1/runners/me/ and POST /api/v1/runners/heartbeat/."""

from tests.site.conftest import error_of


def test_a_runner_learns_its_pool_queue_and_broker(runners, api, settings):
    body = api(runner=runners["h200-1"].secret).get("/api/v1/runners/me/").json()
    assert body["name"] == "h200-1" and body["pool"] == "h200" and body["queue"] == "pool.h200"
    assert body["device"] == "cuda" and body["languages"] == ["cuda", "triton", "cupy"]
    assert body["broker_url"] == settings.RUNNER_BROKER_URL
    assert body["time_limit_s"] > body["soft_time_limit_s"]
    assert body["visibility_timeout_s"] > body["time_limit_s"]


def test_a_heartbeat_is_stored(runners, api):
    client = api(runner=runners["cpu-1"].secret)
    response = client.post("/api/v1/runners/heartbeat/", {"host_info": {"hostname": "node-1"},
                                                          "telemetry": {"gpus": []}}, format="json")
    assert response.status_code == 200
    runner = runners["cpu-1"].runner
    runner.refresh_from_db()
    assert runner.last_heartbeat_at is not None and runner.host_info == {"hostname": "node-1"}


def test_a_malformed_heartbeat_is_a_400(runners, api):
    client = api(runner=runners["cpu-1"].secret)
    response = client.post("/api/v1/runners/heartbeat/", {"host_info": "node-1"}, format="json")
    assert response.status_code == 400
    assert "host_info" in error_of(response)["fields"]


def test_it_needs_a_runner_secret(runners, alice, api):
    assert api().get("/api/v1/runners/me/").status_code == 401
    assert api(runner="khr_nope").get("/api/v1/runners/me/").status_code == 401
    assert api(alice.token).get("/api/v1/runners/me/").status_code == 401


def test_a_disabled_runner_is_refused(runners, api):
    runner = runners["cpu-1"].runner
    runner.is_disabled = True
    runner.save()
    response = api(runner=runners["cpu-1"].secret).post("/api/v1/runners/heartbeat/", {}, format="json")
    assert response.status_code == 403


def test_a_rotated_secret_stops_working(runners, api):
    from apps.devices.services import runner_rotate_secret

    new_secret = runner_rotate_secret(runner=runners["cpu-1"].runner)
    assert api(runner=runners["cpu-1"].secret).get("/api/v1/runners/me/").status_code == 401
    assert api(runner=new_secret).get("/api/v1/runners/me/").status_code == 200
