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


def _without_a_gpu() -> None:
    from apps.submissions.management.commands.run_local import detect_gpu_name

    name = detect_gpu_name()
    if name:
        pytest.skip(f"this machine has a GPU ({name}): run_local gives it its own pool and a local runner")


def _gpu_problem_slugs() -> list[str]:
    return sorted(p.stem.lower().replace("_", "-") for p in (Path(settings.BASE_DIR) / "problems" / "gpu").rglob("*.py")
                  if not p.name.startswith("_"))


def test_without_a_gpu_the_gpu_problems_wait_on_the_h200_pool(db, embedded_redis, alice, api, client, redis_queue,
                                                               django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from apps.submissions.lifecycle import evaluations_sweep
    from apps.submissions.models import Evaluation

    _without_a_gpu()
    out = _setup()
    assert "No GPU found" in out and "pool h200" in out
    pool = HardwarePool.objects.get(slug="h200")
    assert (pool.kind, pool.device, pool.name) == ("gpu", "cuda", "NVIDIA H200")
    assert sorted(Problem.objects.filter(pools=pool).values_list("slug", flat=True)) == _gpu_problem_slugs()
    # A pool with no runner: nothing starts for it, and no example is sent to wait there.
    assert not Runner.objects.filter(pool=pool).exists()
    assert not Submission.objects.filter(pool=pool).exists()

    example = Path(settings.BASE_DIR) / "examples" / "gpu" / "cuda" / "gelu_erf.py"
    with django_capture_on_commit_callbacks(execute=True):
        response = api(alice.token).post("/api/v1/submissions/", {
            "problem": "gelu-erf", "source": example.read_text(), "language": "cuda", "hardware": "h200"},
            format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "queued" and body["hardware"] == "h200"
    assert [m["kwargs"]["job"]["evaluation_id"] for m in redis_queue("pool.h200")] == [body["evaluation_id"]]

    # A day later, with still no runner: the sweeper leaves it waiting, neither re-sent nor failed as lost.
    evaluation = Evaluation.objects.get(pk=body["evaluation_id"])
    long_ago = timezone.now() - timedelta(days=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(queued_at=long_ago, last_progress_at=long_ago)
    with django_capture_on_commit_callbacks(execute=True):
        counts = evaluations_sweep()
    assert counts["waiting"] == 1 and counts["requeued"] == counts["failed"] == 0
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.attempt, evaluation.message) == ("queued", 1, "")
    assert len(redis_queue("pool.h200")) == 1

    # The pages say it waits for a runner; the board shows the pool, empty.
    page = client.get(f"/submissions/{body['id']}/").content.decode()
    assert "Waiting for a runner." in page and "No runner of the h200 pool is online" in page
    assert 'data-idle-pool="h200"' in client.get("/problems/").content.decode()
    home = client.get("/").content.decode()
    card = home.split('data-pool="h200"', 1)[1].split("</article>", 1)[0]
    assert 'data-field="no-runner"' in card and "No verified result yet on its" in card
    board = client.get("/leaderboard/h200/")
    assert board.status_code == 200 and "No results on NVIDIA H200 yet" in board.content.decode()


@pytest.mark.slow  # starts the live ASGI server
def test_without_a_gpu_the_client_lists_the_gpu_problems(live_asgi_server, embedded_redis):
    from tests.client.helpers import one_json_object, run_cli

    _without_a_gpu()
    _setup()
    code, out, _ = run_cli("--url", live_asgi_server, "problems", "--hardware", "h200", "--json")
    problems = one_json_object(out)["problems"]
    assert code == 0 and sorted(p["slug"] for p in problems) == _gpu_problem_slugs()
    assert all(p["hardware"] == ["h200"] for p in problems)
