"""Each file is reported as submitted, duplicate, unknown problem or error, with what to do about it."""

from io import StringIO

from django.core.management import call_command

from apps.submissions.models import Evaluation, Submission
from tests.importers.conftest import solution_source, write


def test_it_reports_each_file_and_submits_every_sample(suite, llm, tmp_path):
    gen = tmp_path / "run"
    write(gen / "level_1_problem_19_sample_0_kernel.py", solution_source(0))
    write(gen / "level_1_problem_19_sample_1_kernel.py", solution_source(1))
    write(gen / "level_1_problem_19_sample_2_kernel.py", solution_source(0))  # same as sample 0
    write(gen / "level_9_problem_99_sample_0_kernel.py", solution_source(2))  # no such problem
    write(gen / "my_best_kernel.py", solution_source(3))  # no layout
    write(gen / "level_3_problem_1_sample_0_kernel.py", "   \n")  # empty
    out = StringIO()
    call_command("import_generations", str(gen), "--entrant", llm.slug, "--hardware", "h200", stdout=out)
    lines = out.getvalue().splitlines()

    def line_for(name: str) -> str:
        return next(line for line in lines if name in line)

    assert line_for("sample_0_kernel.py -> l1-19").startswith("submitted")
    assert line_for("problem_19_sample_1").startswith("submitted")
    dup = line_for("problem_19_sample_2")
    assert dup.startswith("duplicate") and "same source as #" in dup
    unknown = line_for("level_9_problem_99")
    assert unknown.startswith("unknown problem") and "import_kernelbench" in unknown
    assert line_for("my_best_kernel.py").startswith("unknown problem")
    empty = line_for("level_3_problem_1")
    assert empty.startswith("error") and "empty" in empty
    assert "6 file(s): 2 submitted, 1 duplicate, 2 unknown problem, 1 error" in lines[-1]
    # Every sample is its own submission; the leaderboard picks the best.
    assert Submission.objects.filter(entrant=llm, problem__slug="l1-19-relu").count() == 2
    assert Evaluation.objects.filter(submission__entrant=llm, status="queued").count() == 2

    # Running the same import again submits nothing new.
    out = StringIO()
    call_command("import_generations", str(gen), "--entrant", llm.slug, "--hardware", "h200", stdout=out)
    assert "0 submitted, 3 duplicate, 2 unknown problem, 1 error" in out.getvalue()
    assert Submission.objects.filter(entrant=llm).count() == 2
