"""`python -m gpu_runner evaluate --solution DIR|ARCHIVE`: a CUDA Agent workdir is built the way its compile.py
builds it (every .cu/.cpp of the top folder and kernels/ into one extension, cuda_extension), in the sandboxed
builder, and model_new.py's `import cuda_extension` gets that library. On the CPU, the .cpp-only example; the
.cu example on a GPU (marked cuda). The build is cached by its sources and flags, so a second run builds nothing."""

import json
import subprocess
import sys

import pytest
import torch

from gpu_runner.evaluate import evaluate
from gpu_runner.workdir import read_directory
from tests.workdirs.helpers import PROBLEM_FILE, WORKDIR_CPU, WORKDIR_CUDA, tar_gz_bytes, workdir_files


def _cli(solution, tmp_path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpu_runner", "evaluate", "--problem", str(PROBLEM_FILE), "--solution",
         str(solution), "--device", "cpu", "--json", *extra], capture_output=True, text=True, timeout=1500)


def test_it_builds_a_cpu_workdir_archive_and_accepts_it(tmp_path):
    archive = tmp_path / "axpby_fused.tar.gz"
    archive.write_bytes(tar_gz_bytes(workdir_files(WORKDIR_CPU)))
    done = _cli(archive, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["verdict"] == "accepted", result["message"]
    assert result["solution_format"] == "cuda_agent_workdir" and result["rules"] == "cuda_agent"
    assert result["language"] == "cpp" and result["runtime_us"] > 0
    builds = result["checks"]["builds"]
    assert [b["name"] for b in builds] == ["cuda_extension"] and builds[0]["ok"]


def test_it_refuses_a_workdir_whose_model_py_is_another_problem(tmp_path):
    files = workdir_files(WORKDIR_CPU)
    files["model.py"] = files["model.py"].replace(b"+ self.shift", b"- self.shift")
    archive = tmp_path / "other.zip"
    from tests.workdirs.helpers import zip_bytes

    archive.write_bytes(zip_bytes(files))
    done = _cli(archive, tmp_path)
    assert done.returncode == 2
    assert "model.py differs from the --problem file" in done.stderr


def test_it_reports_compile_errors_per_file():
    wd = read_directory(WORKDIR_CPU)
    wd.files["kernels/silu_shift.cpp"] = wd.files["kernels/silu_shift.cpp"].replace(
        "const float v = z[i];", "const float v = z[i]")
    result = evaluate(PROBLEM_FILE.read_text(), wd.to_bundle(), device="cpu")
    assert result["verdict"] == "compile_error"
    message = result["message"]
    assert "kernels/silu_shift.cpp:" in message and "error" in message
    assert "/src/" not in message  # paths as the workdir names them, not the builder's directory


def test_a_cuda_workdir_on_the_cpu_says_to_use_a_gpu_pool():
    result = evaluate(PROBLEM_FILE.read_text(), read_directory(WORKDIR_CUDA).to_bundle(), device="cpu")
    assert result["verdict"] == "compile_error"
    assert "need a GPU" in result["message"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_it_builds_the_cuda_workdir_on_a_gpu_and_accepts_it():
    result = evaluate(PROBLEM_FILE.read_text(), read_directory(WORKDIR_CUDA).to_bundle(), device="cuda")
    assert result["verdict"] == "accepted", result["message"]
    assert result["language"] == "cuda" and result["rules"] == "cuda_agent"
    assert result["checks"]["builds"][0]["name"] == "cuda_extension"
