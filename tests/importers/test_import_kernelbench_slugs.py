"""import_kernelbench names problems l<level>-<number>-<name>, titles them after the name, keeps levels."""

from io import StringIO

from django.core.management import call_command

from apps.submissions.models import Problem
from tests.importers.conftest import kernelbench_tree


def test_it_imports_levels_1_to_3_with_kernelbench_slugs(pools, tmp_path):
    out = StringIO()
    call_command("import_kernelbench", str(kernelbench_tree(tmp_path)), stdout=out, stderr=StringIO())
    problems = {p.slug: p for p in Problem.objects.all()}
    assert set(problems) == {"l1-19-relu", "l1-1-square-matrix-multiplication", "l2-7-conv3d-relu-leakyrelu",
                             "l3-1-mlp"}
    relu = problems["l1-19-relu"]
    assert relu.title == "ReLU" and relu.level == 1 and relu.version == 1
    assert relu.origin == "kernelbench"
    assert "torch.relu(x)" in relu.source
    assert problems["l1-1-square-matrix-multiplication"].title == "Square matrix multiplication"
    assert problems["l2-7-conv3d-relu-leakyrelu"].level == 2
    assert problems["l3-1-mlp"].level == 3
    assert "4 created, 0 updated, 0 unchanged, 0 error" in out.getvalue()
