"""Bad arguments are refused up front with what to do."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.importers.conftest import solution_source, write


def test_it_refuses_an_unknown_entrant_pool_or_folder(suite, llm, tmp_path):
    gen = tmp_path / "run"
    write(gen / "level_1_problem_19_sample_0_kernel.py", solution_source(0))
    with pytest.raises(CommandError, match="No entrant named 'Nobody'.*create_entrant --name 'Nobody'"):
        call_command("import_generations", str(gen), "--entrant", "Nobody", stdout=StringIO())
    with pytest.raises(CommandError, match="No active hardware pool 'tpu'; active pools: cpu, h200"):
        call_command("import_generations", str(gen), "--entrant", llm.name, "--hardware", "tpu",
                     stdout=StringIO())
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("import_generations", str(tmp_path / "nope"), "--entrant", llm.name, stdout=StringIO())
    write(tmp_path / "empty" / "notes.txt", "")
    with pytest.raises(CommandError, match="No .py files"):
        call_command("import_generations", str(tmp_path / "empty"), "--entrant", llm.name, stdout=StringIO())
