"""manage.py load_problems: slug rule, idempotence, versions, pools."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.submissions.models import Problem, ProblemVersion
from tests.site.conftest import PROBLEM_FILE

SOURCE = PROBLEM_FILE.read_text()


def _load(*args):
    out = StringIO()
    call_command("load_problems", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def test_the_slug_is_the_stem_lower_cased_with_dashes(pools, tmp_path):
    path = tmp_path / "level2" / "ReLU_Scale_Bias.py"
    path.parent.mkdir()
    path.write_text(SOURCE.replace('"level": 1, ', ""))
    _load(path, "--hardware", "cpu")
    problem = Problem.objects.get(slug="relu-scale-bias")
    assert problem.level == 2  # from the folder, KERNELHUB naming none
    assert [p.slug for p in problem.pools.all()] == ["cpu"]


def test_loading_twice_changes_nothing(pools, tmp_path):
    path = tmp_path / "add_one.py"
    path.write_text(SOURCE)
    assert "1 created" in _load(path, "--hardware", "cpu")
    assert "1 unchanged" in _load(path, "--hardware", "cpu")
    assert Problem.objects.count() == 1 and ProblemVersion.objects.count() == 1


def test_a_changed_file_makes_a_new_version(pools, tmp_path):
    path = tmp_path / "add_one.py"
    path.write_text(SOURCE)
    _load(path, "--hardware", "cpu")
    path.write_text(SOURCE.replace("4096", "8192"))
    assert "1 updated" in _load(path, "--hardware", "cpu")
    problem = Problem.objects.get(slug="add-one")
    assert problem.version == 2 and "8192" in problem.source
    assert list(problem.versions.values_list("version", flat=True)) == [2, 1]
    assert "4096" in problem.versions.get(version=1).source


def test_level_option_and_metadata(pools, tmp_path):
    path = tmp_path / "add_one.py"
    path.write_text(SOURCE)
    _load(path, "--hardware", "cpu", "--level", "3")
    problem = Problem.objects.get(slug="add-one")
    assert problem.level == 3 and problem.title == "Add one"


def test_the_bundled_layout_picks_the_pools(pools, tmp_path):
    cpu_file = tmp_path / "problems" / "cpu" / "level1" / "add_one_cpu.py"
    gpu_file = tmp_path / "problems" / "gpu" / "level1" / "add_one.py"
    for path in (cpu_file, gpu_file):
        path.parent.mkdir(parents=True)
        path.write_text(SOURCE)
    _load(tmp_path / "problems")
    assert [p.slug for p in Problem.objects.get(slug="add-one-cpu").pools.all()] == ["cpu"]
    assert [p.slug for p in Problem.objects.get(slug="add-one").pools.all()] == ["h200"]


def test_a_file_that_is_no_problem_is_refused_with_the_reason(pools, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import torch\n\nclass Model:\n    pass\n")
    with pytest.raises(CommandError, match="get_inputs"):
        _load(path, "--hardware", "cpu")
    assert not Problem.objects.exists()


def test_an_unknown_pool_is_refused(pools, tmp_path):
    path = tmp_path / "add_one.py"
    path.write_text(SOURCE)
    with pytest.raises(CommandError, match="Unknown hardware pool tpu"):
        _load(path, "--hardware", "tpu")


def test_a_missing_path_is_refused(db):
    with pytest.raises(CommandError, match="no such file"):
        _load("/nonexistent/problems")
