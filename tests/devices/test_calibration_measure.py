"""gpu_runner.calibration measures the ceilings on the runner and refreshes the evaluator's speed-of-light
cache (gpu_runner/limits.py), so one measurement serves both. Imports without Django (runner hosts lack it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from gpu_runner import calibration, limits
from tests.conftest import REPO_ROOT

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELHUB_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_it_measures_the_cpu_and_feeds_the_speed_of_light_check(cache_dir):
    result = calibration.measure("cpu")
    assert result["device"] == "cpu" and result["matmul_bf16_tflops"] is None
    # Sane for any CPU of this decade: between 0.1 GB/s and 1 TB/s, 0.1 GFLOP/s and 100 TFLOP/s.
    assert 0.1 < result["copy_bandwidth_gbps"] < 1000
    assert 1e-4 < result["matmul_fp32_tflops"] < 100
    assert result["reference_kernel_us"] > 0
    assert limits.cached_bandwidth(result["device_model"]) is None
    assert calibration.store_for_evaluator(result) is True
    assert limits.cached_bandwidth(result["device_model"]) == pytest.approx(result["copy_bytes_per_s"])
    assert calibration.site_payload(result, "cpu0")["worker"] == "cpu0"


def test_the_cache_keeps_the_highest_bandwidth(cache_dir):
    # A measurement on a busy host must not raise the speed-of-light floor over honest kernels.
    result = {"device_model": "test-device", "copy_bytes_per_s": 100e9, "copy_bytes": 1 << 30}
    assert calibration.store_for_evaluator(result) is True
    assert calibration.store_for_evaluator({**result, "copy_bytes_per_s": 60e9}) is False
    assert limits.cached_bandwidth("test-device") == 100e9
    assert calibration.store_for_evaluator({**result, "copy_bytes_per_s": 120e9}) is True
    assert limits.cached_bandwidth("test-device") == 120e9


def test_the_command_prints_one_json_object(cache_dir):
    done = subprocess.run([sys.executable, "-m", "gpu_runner.calibration", "--device", "cpu", "--json"],
                          cwd=REPO_ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["copy_bandwidth_gbps"] > 0 and "softmax" in result["reference_kernel"]
    assert limits.cached_bandwidth(result["device_model"]) == pytest.approx(result["copy_bytes_per_s"])


def test_it_says_when_no_gpu_is_visible(cache_dir):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([sys.executable, "-m", "gpu_runner.calibration", "--device", "cuda"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "No CUDA device is visible" in done.stderr


@pytest.mark.cuda
@needs_cuda
def test_it_measures_a_gpu(cache_dir):
    previous = torch.backends.cuda.matmul.allow_tf32
    result = calibration.measure("cuda")
    assert torch.backends.cuda.matmul.allow_tf32 == previous  # restored for whoever runs next
    # Any datacenter GPU: copy above 100 GB/s, bf16 tensor cores well above fp32 without TF32.
    assert result["copy_bandwidth_gbps"] > 100
    assert result["matmul_bf16_tflops"] > 2 * result["matmul_fp32_tflops"] > 0
    assert result["versions"]["cuda"] and result["device_model"] != "unknown-gpu"
    calibration.store_for_evaluator(result)
    assert limits.cached_bandwidth(result["device_model"]) == pytest.approx(result["copy_bytes_per_s"])


@pytest.mark.cuda
@needs_cuda
def test_each_gpu_is_measured_pinned(cache_dir):
    count = torch.cuda.device_count()
    results = [calibration.calibrate_in_subprocess(device="cuda", pin=str(i)) for i in range(count)]
    assert all(r["copy_bandwidth_gbps"] > 100 for r in results)
    print(json.dumps([{k: r[k] for k in ("device_model", "copy_bandwidth_gbps", "matmul_fp32_tflops",
                                        "matmul_bf16_tflops", "reference_kernel_us")} for r in results], indent=1))
