"""Importing again leaves unchanged files alone; a changed file makes a new problem version."""

from io import StringIO

from django.core.management import call_command

from apps.submissions.models import Problem, ProblemVersion
from tests.importers.conftest import kernelbench_tree, problem_source


def test_it_leaves_unchanged_files_alone_and_versions_changed_ones(pools, tmp_path):
    root = kernelbench_tree(tmp_path)
    call_command("import_kernelbench", str(root), stdout=StringIO(), stderr=StringIO())
    before = {p.slug: (p.version, p.updated_at) for p in Problem.objects.all()}

    out = StringIO()
    call_command("import_kernelbench", str(root), stdout=out, stderr=StringIO())
    assert "0 created, 0 updated, 4 unchanged" in out.getvalue()
    assert {p.slug: (p.version, p.updated_at) for p in Problem.objects.all()} == before

    (root / "KernelBench" / "level1" / "19_ReLU.py").write_text(problem_source("relu", " * 2"))
    out = StringIO()
    call_command("import_kernelbench", str(root), stdout=out, stderr=StringIO())
    assert "0 created, 1 updated, 3 unchanged" in out.getvalue()
    relu = Problem.objects.get(slug="l1-19-relu")
    assert relu.version == 2 and "torch.relu(x) * 2" in relu.source
    versions = list(ProblemVersion.objects.filter(problem=relu).order_by("version"))
    assert [v.version for v in versions] == [1, 2]
    assert "* 2" not in versions[0].source and "* 2" in versions[1].source
    assert Problem.objects.get(slug="l3-1-mlp").version == 1
