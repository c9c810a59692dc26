"""import_generations submits a folder of CUDA Agent workdirs (folders and archives), each matched to its problem
by its name or its model.py; create_entrant makes "CUDA Agent", which the reported page then lines up with its
published figures; the submission page shows CUDA Agent's own metric where the evaluator gives it."""

import io
import shutil

import pytest
from django.core.management import call_command
from django.test import Client

from apps.submissions.models import Entrant, Evaluation, Submission
from tests.workdirs.helpers import WORKDIR_CPU, workdir_files, zip_bytes


def test_import_generations_submits_workdir_folders_and_archives(workdir_problem, alice, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(WORKDIR_CPU, run / "task_0001")  # no problem in its name: matched by its model.py
    (run / "task_0001" / "build").mkdir()
    (run / "task_0001" / "build" / "cuda_extension.so").write_bytes(b"\x7fELF")  # left out of a folder
    files = workdir_files(WORKDIR_CPU)
    files["kernels/axpby.cpp"] += b"// a second sample\n"
    (run / "axpby-fused.zip").write_bytes(zip_bytes(files))
    bad = {**files, "model.py": files["model.py"] + b"# edited\n"}
    (run / "task_0002.zip").write_bytes(zip_bytes(bad))
    out = io.StringIO()
    call_command("import_generations", str(run), "--entrant", alice.entrant.slug, "--hardware", "cpu", stdout=out)
    text = out.getvalue()
    assert "submitted        task_0001 (workdir) -> axpby-fused on cpu" in text
    assert "submitted        axpby-fused.zip (workdir) -> axpby-fused on cpu" in text
    assert "task_0002.zip: The workdir's model.py is none of this site's problems" in text
    assert Submission.objects.filter(problem=workdir_problem, language="cpp").count() == 2


@pytest.mark.django_db
def test_create_entrant_cuda_agent_meets_its_published_figures(pools):
    out = io.StringIO()
    call_command("create_entrant", "--name", "CUDA Agent", "--kind", "agent", stdout=out)
    entrant = Entrant.objects.get(name="CUDA Agent")
    assert entrant.kind == "agent" and entrant.slug == "cuda-agent"
    html = Client().get("/leaderboard/reported/?hardware=h200").content.decode()
    overall = html[html.index('data-subset="overall"'):html.index('data-subset="level1"')]
    assert "CUDA Agent" in overall and "98.8%" in overall  # its published pass rate, on the reported side


def test_the_page_shows_the_profiler_time_where_the_evaluator_gives_it(workdir_problem, alice, api, client):
    from apps.submissions.services import submission_create_from_workdir

    submission, evaluation, _ = submission_create_from_workdir(entrant=alice.entrant,
                                                               archive=zip_bytes(workdir_files(WORKDIR_CPU)),
                                                               hardware="cpu")
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'id="kernel-time"' not in page
    Evaluation.objects.filter(pk=evaluation.pk).update(status="done", verdict="accepted", runtime_us=40.0,
                                                       result={"verdict": "accepted", "kernel_time_us": 12.5,
                                                               "rules": "cuda_agent"})
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert 'id="kernel-time"' in page and "Kernel time (profiler, summed)" in page and "12.5" in page
