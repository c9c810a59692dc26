"""PATH may be the checkout's root or its KernelBench/ folder; anything else is refused with a hint."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.submissions.models import Problem
from tests.importers.conftest import kernelbench_tree


def test_it_accepts_the_kernelbench_folder_itself(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    err = StringIO()
    call_command("import_kernelbench", str(root / "KernelBench"), stdout=StringIO(), stderr=err)
    assert Problem.objects.count() == 4
    assert "README.py" in err.getvalue() and "skipped" in err.getvalue()


def test_it_imports_only_the_levels_asked_for(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    call_command("import_kernelbench", str(root), "--level", "2", stdout=StringIO(), stderr=StringIO())
    assert list(Problem.objects.values_list("slug", flat=True)) == ["l2-7-conv3d-relu-leakyrelu"]


def test_it_refuses_a_folder_without_levels(pools, tmp_path):
    (tmp_path / "stuff").mkdir()
    with pytest.raises(CommandError, match="No level1/, level2/ or level3/ folder"):
        call_command("import_kernelbench", str(tmp_path / "stuff"), stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("import_kernelbench", str(tmp_path / "missing"), stdout=StringIO(), stderr=StringIO())


def test_it_reports_a_broken_file_and_imports_the_rest(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    (root / "KernelBench" / "level1" / "2_Broken.py").write_text("def get_inputs(:\n")
    err = StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("import_kernelbench", str(root), stdout=StringIO(), stderr=err)
    assert "2_Broken.py" in err.getvalue() and "not valid Python" in err.getvalue()
    assert Problem.objects.count() == 4
