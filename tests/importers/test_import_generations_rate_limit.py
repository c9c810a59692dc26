"""An operator's bulk import is not held to the per-entrant hourly rate limit that API submissions are."""

from io import StringIO

import pytest
from django.core.management import call_command

from apps.submissions.models import Submission
from apps.submissions.services import SubmissionError, submission_create
from tests.importers.conftest import solution_source, write


def test_it_submits_past_the_hourly_limit(suite, llm, tmp_path, settings):
    settings.SUBMISSIONS_PER_HOUR = 2
    gen = tmp_path / "run"
    for sample in range(4):
        write(gen / f"level_1_problem_19_sample_{sample}_kernel.py", solution_source(sample))
    out = StringIO()
    call_command("import_generations", str(gen), "--entrant", llm.name, "--hardware", "h200", stdout=out)
    assert "4 submitted" in out.getvalue()
    assert Submission.objects.filter(entrant=llm).count() == 4
    # The same entrant through the API's path is limited.
    with pytest.raises(SubmissionError) as exc:
        submission_create(entrant=llm, problem_slug="l1-19-relu", source=solution_source(9), hardware="h200")
    assert exc.value.code == "rate_limited"
