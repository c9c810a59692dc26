"""KernelBench fixes problems by renaming them and keeping the old file as N_Name_OLD.py: the problem keeps its
slug and gets a new version, the _OLD copy is skipped, and two live files for one number are refused."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.submissions.models import Problem
from tests.importers.conftest import kernelbench_tree, problem_source


def test_it_versions_a_renamed_problem_under_its_first_slug(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    call_command("import_kernelbench", str(root), stdout=StringIO(), stderr=StringIO())
    level2 = root / "KernelBench" / "level2"
    (level2 / "7_Conv3d_ReLU_LeakyReLU.py").rename(level2 / "7_Conv3d_ReLU_LeakyReLU_OLD.py")
    (level2 / "7_Conv3d_ReLU.py").write_text(problem_source("sigmoid", " + 0.5"))
    out, err = StringIO(), StringIO()
    call_command("import_kernelbench", str(root), stdout=out, stderr=err)
    assert "renamed file, slug kept" in out.getvalue()
    assert "7_Conv3d_ReLU_LeakyReLU_OLD.py: a superseded copy" in err.getvalue()
    level2_problems = list(Problem.objects.filter(level=2))
    assert [p.slug for p in level2_problems] == ["l2-7-conv3d-relu-leakyrelu"]
    assert level2_problems[0].version == 2 and level2_problems[0].title == "Conv3d ReLU"
    assert "+ 0.5" in level2_problems[0].source


def test_it_refuses_two_live_files_for_one_number(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    (root / "KernelBench" / "level1" / "19_ReLU_variant.py").write_text(problem_source("relu"))
    err = StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("import_kernelbench", str(root), stdout=StringIO(), stderr=err)
    assert "several files are problem 19 (19_ReLU.py, 19_ReLU_variant.py)" in err.getvalue()
    assert not Problem.objects.filter(slug__startswith="l1-19-").exists()
    assert Problem.objects.count() == 3
