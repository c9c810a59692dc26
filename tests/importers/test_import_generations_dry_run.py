"""--dry-run checks every file as a real import would, and writes nothing."""

from io import StringIO

from django.core.management import call_command

from apps.submissions.models import Evaluation, Submission
from tests.importers.conftest import solution_source, write


def test_it_checks_everything_and_writes_nothing(suite, llm, tmp_path):
    gen = tmp_path / "run"
    write(gen / "level_1_problem_19_sample_0_kernel.py", solution_source(0))
    write(gen / "level_1_problem_19_sample_1_kernel.py", solution_source(0))
    write(gen / "level_3_problem_1_sample_0_kernel.py", solution_source(1))
    write(gen / "l3-1-mlp.py", "x" * 300_000)  # over MAX_SOURCE_BYTES
    out = StringIO()
    call_command("import_generations", str(gen), "--entrant", llm.name, "--hardware", "h200", "--dry-run",
                 stdout=out)
    text = out.getvalue()
    assert "would submit     level_1_problem_19_sample_0_kernel.py -> l1-19-relu on h200" in text
    assert "duplicate        level_1_problem_19_sample_1_kernel.py" in text
    assert "error            l3-1-mlp.py: The source is 300000 bytes" in text
    assert "2 to submit, 1 duplicate, 0 unknown problem, 1 error (dry run: nothing was written)" in text
    assert Submission.objects.count() == 0 and Evaluation.objects.count() == 0
