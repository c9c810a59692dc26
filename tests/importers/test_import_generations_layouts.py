"""import_generations reads each file's problem from the common layouts of generated solutions."""

from io import StringIO

from django.core.management import call_command

from apps.submissions.models import Submission
from tests.importers.conftest import solution_source, write

LAYOUTS = {
    "level_1_problem_19_sample_0_kernel.py": "l1-19-relu",  # KernelBench's runs/ naming
    "level2_problem7_sample1.py": "l2-7-conv3d-relu-leakyrelu",  # compact variant
    "mirror/level3/1_MLP.py": "l3-1-mlp",  # a mirror of KernelBench's tree
    "mirror/level_1/1_Square_matrix_multiplication__sample_4.py": "l1-1-square-matrix-multiplication",
    "l1-19-relu.py": "l1-19-relu",  # the slug as the file name
    "relu-scale-bias/sample_2.py": "relu-scale-bias",  # the slug as a folder of samples
    "examples/relu_scale_bias.py": "relu-scale-bias",  # the file-name stem, as examples/ name them
    "l3-1_sample3.py": "l3-1-mlp",  # l<level>-<number>
}


def test_it_resolves_every_documented_layout(suite, llm, tmp_path):
    gen = tmp_path / "generations"
    for i, name in enumerate(LAYOUTS):
        write(gen / name, solution_source(variant=i))
    write(gen / "eval_results.json", "{}")
    out = StringIO()
    call_command("import_generations", str(gen), "--entrant", "Frontier LLM X", "--hardware", "h200", stdout=out)
    text = out.getvalue()
    got = {s.source: s.problem.slug for s in Submission.objects.filter(entrant=llm)}
    assert got == {solution_source(variant=i): slug for i, slug in enumerate(LAYOUTS.values())}
    assert all(s.pool.slug == "h200" for s in Submission.objects.all())
    for name, slug in LAYOUTS.items():
        assert f"{name} -> {slug} on h200 #" in text
    assert "8 file(s): 8 submitted, 0 duplicate, 0 unknown problem, 0 error; 1 non-Python file(s) ignored" in text
