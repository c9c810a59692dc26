"""`python -m ane_runner validate --json` prints one JSON object of a fixed shape; bad arguments say what to do."""

import json
import subprocess
import sys

from tests.ane.helpers import EXAMPLES, POINTWISE, REPO


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "ane_runner", "validate", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_it_prints_one_json_object_of_the_contracted_shape(tmp_path):
    out_pkg, out_base = tmp_path / "solution.zip", tmp_path / "baseline.zip"
    run = _cli("--problem", str(POINTWISE), "--solution", str(EXAMPLES / "mil/pointwise_conv_relu_ane.py"),
               "--json", "--out-package", str(out_pkg), "--out-baseline", str(out_base))
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)  # the whole of stdout: nothing else is printed there
    assert set(report) == {"eligible", "ops", "flops", "flops_dense", "issues", "reference", "conversion",
                           "error", "baseline", "numpy_check"}
    assert report["eligible"] is True and report["error"] is None
    assert all(isinstance(k, str) and isinstance(v, int) for k, v in report["ops"].items())
    assert isinstance(report["flops"], int) and report["flops"] >= report["flops_dense"] > 0
    assert len(report["reference"]["digest"]) == 64
    assert {"weights_seed", "input_seed", "inputs", "outputs", "atol", "rtol"} <= set(report["reference"])
    assert {"coremltools", "source", "specification_version", "opset", "inputs", "outputs", "sandbox"} <= set(
        report["conversion"])
    assert report["baseline"]["compute_units"] == ["ALL", "CPU_ONLY"]
    assert set(report["numpy_check"]) == {"ran", "matches", "detail", "max_abs_err"}
    assert out_pkg.read_bytes()[:4] == b"PK\x03\x04" and out_base.read_bytes()[:4] == b"PK\x03\x04"


def test_it_exits_1_with_issues_for_an_ineligible_solution(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("def build(weights, input_shapes):\n    raise ValueError('no model today')\n")
    run = _cli("--problem", str(POINTWISE), "--solution", str(bad), "--json", "--no-baseline")
    assert run.returncode == 1
    report = json.loads(run.stdout)
    assert report["eligible"] is False and "baseline" not in report
    assert report["issues"][0]["rule"] == "build" and "no model today" in report["issues"][0]["detail"]
    assert set(report["issues"][0]) == {"op", "rule", "detail"}


def test_it_says_what_to_do_with_bad_arguments(tmp_path):
    run = _cli("--problem", str(tmp_path / "missing.py"), "--solution", str(POINTWISE), "--json")
    assert run.returncode == 2 and "cannot read" in run.stderr and run.stdout == ""
    not_a_problem = tmp_path / "p.py"
    not_a_problem.write_text("x = 1\n")
    run = _cli("--problem", str(not_a_problem), "--solution", str(POINTWISE), "--json")
    assert run.returncode == 2 and "lacks `Model`" in run.stderr
