"""/staff/: staff only; pools with queue depth read from the broker, runners, actions, the audit log."""

from apps.devices.models import AuditLog, Runner
from tests.devices.helpers import heartbeat


def test_it_sends_anonymous_visitors_to_the_login_page(client, runners):
    response = client.get("/staff/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/staff/")
    response = client.post("/staff/runners/cpu-1/disable/")
    assert response.status_code == 302
    assert not Runner.objects.get(name="cpu-1").is_disabled


def test_it_refuses_signed_in_users_without_staff_rights(client, charlie, runners):
    client.force_login(charlie)
    assert client.get("/staff/").status_code == 403
    assert client.post("/staff/runners/cpu-1/disable/").status_code == 403
    assert client.post("/staff/runners/cpu-1/rotate/").status_code == 403
    runner = Runner.objects.get(name="cpu-1")
    assert not runner.is_disabled and runner.secret_hash == runners["cpu-1"].runner.secret_hash
    assert not AuditLog.objects.exists()


def test_it_shows_pools_runners_and_the_queue_depth_from_the_broker(staff_client, runners, api, redis_queue):
    heartbeat(api, runners["cpu-1"].secret, gpus=[])
    # Three real messages waiting on the broker for pool.cpu.
    from kernelhub.celery import app

    for i in range(3):
        app.send_task("gpu_runner.evaluate_job", kwargs={"job": {"evaluation_id": i}}, queue="pool.cpu")
    page = staff_client.get("/staff/").content.decode()
    assert 'id="pool-cpu"' in page and 'id="pool-h200"' in page
    cpu_section = page.split('id="pool-cpu"')[1].split('id="pool-h200"')[0]
    assert "3 jobs waiting" in cpu_section
    assert 'id="runner-cpu-1"' in cpu_section and ">online<" in cpu_section
    assert 'id="runner-cpu-2"' in cpu_section and ">offline<" in cpu_section
    assert "0 jobs waiting" in page.split('id="pool-h200"')[1]


def test_it_says_when_the_broker_cannot_be_read(staff_client, runners, settings):
    from kernelhub.celery import app

    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens there
    try:
        page = staff_client.get("/staff/").content.decode()
    finally:
        app.conf.broker_url = settings.CELERY_BROKER_URL
    assert "queue depth unknown (broker unreachable)" in page


def test_it_rotates_a_secret_and_shows_the_new_one_once(staff_client, runners, api, sam):
    response = staff_client.post("/staff/runners/cpu-1/rotate/")
    assert response.status_code == 200
    page = response.content.decode()
    secret = page.split('id="new-secret-value">')[1].split("<")[0]
    assert secret.startswith("khr_") and secret != runners["cpu-1"].secret
    assert api(runner=runners["cpu-1"].secret).get("/api/v1/runners/me/").status_code == 401
    assert api(runner=secret).get("/api/v1/runners/me/").status_code == 200
    assert secret not in staff_client.get("/staff/").content.decode()  # shown once
    entry = AuditLog.objects.get(action=AuditLog.ACTION_ROTATE)
    assert entry.actor == sam and entry.runner_name == "cpu-1" and secret not in entry.detail


def test_it_disables_and_enables_with_an_audit_trail(staff_client, runners, api, sam):
    response = staff_client.post("/staff/runners/cpu-1/disable/", follow=True)
    assert "cpu-1 is disabled" in response.content.decode()
    assert api(runner=runners["cpu-1"].secret).get("/api/v1/runners/me/").status_code == 403
    staff_client.post("/staff/runners/cpu-1/enable/")
    assert api(runner=runners["cpu-1"].secret).get("/api/v1/runners/me/").status_code == 200
    actions = list(AuditLog.objects.order_by("id").values_list("action", "actor__username", "runner_name"))
    assert actions == [("disable", "sam", "cpu-1"), ("enable", "sam", "cpu-1")]
    page = staff_client.get("/staff/").content.decode()
    audit = page.split('id="audit-log"')[1]
    assert audit.index("Enable") < audit.index("Disable")  # newest first


def test_it_drains_with_a_reason_and_resumes(staff_client, runners, api):
    staff_client.post("/staff/runners/cpu-2/drain/", {"reason": "swapping a fan"})
    runner = Runner.objects.get(name="cpu-2")
    assert runner.is_draining and runner.drain_reason == "swapping a fan"
    assert heartbeat(api, runners["cpu-2"].secret)["is_draining"] is True
    entry = AuditLog.objects.get(action=AuditLog.ACTION_DRAIN)
    # No worker of cpu-2 runs in this test: the log says what was (not) reached.
    assert entry.detail.startswith("swapping a fan; ") and "cancel_consumer" in entry.detail
    staff_client.post("/staff/runners/cpu-2/resume/")
    runner.refresh_from_db()
    assert not runner.is_draining and runner.drain_reason == ""
    assert "was drained for: swapping a fan" in AuditLog.objects.get(action=AuditLog.ACTION_RESUME).detail


def test_it_answers_unknown_runners_and_actions_clearly(staff_client, runners):
    assert staff_client.post("/staff/runners/nope/drain/").status_code == 404
    response = staff_client.post("/staff/runners/cpu-1/reboot/", follow=True)
    assert "Unknown action &#x27;reboot&#x27;: use one of drain, resume" in response.content.decode()
    assert staff_client.get("/staff/runners/cpu-1/disable/").status_code == 405


def test_it_shows_a_busy_runners_job(staff_client, problem, alice, runners, api, redis_queue,
                                     django_capture_on_commit_callbacks):
    from tests.devices.helpers import claimed_job

    heartbeat(api, runners["cpu-1"].secret)
    evaluation, _job = claimed_job(problem=problem, alice=alice, runners=runners, api=api, redis_queue=redis_queue,
                                   capture=django_capture_on_commit_callbacks)
    row = staff_client.get("/staff/").content.decode().split('id="runner-cpu-1"')[1].split("</tr>")[0]
    assert ">busy<" in row
    assert f'<a href="/submissions/{evaluation.submission_id}/">#{evaluation.pk}</a> add-one-cpu' in row


def test_the_django_admin_drains_and_resumes_through_the_same_service(admin_client, runners):
    url = "/admin/devices/runner/"
    pk = runners["cpu-1"].runner.pk
    admin_client.post(url, {"action": "drain", "_selected_action": [pk]})
    runner = Runner.objects.get(pk=pk)
    assert runner.is_draining and runner.drain_reason.startswith("drained by admin")
    admin_client.post(url, {"action": "resume", "_selected_action": [pk]})
    assert not Runner.objects.get(pk=pk).is_draining
    assert list(AuditLog.objects.order_by("id").values_list("action", flat=True)) == ["drain", "resume"]
