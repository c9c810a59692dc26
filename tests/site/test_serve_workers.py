"""`python -m gpu_runner serve` starts the right Celery workers: one per GPU pinned with CUDA_VISIBLE_DEVICES
(KERNELHUB_GPU_JOBS jobs at once), one for a CPU pool (one job at a time), each on the pool's queue with prefetch
1. Imports no Django."""

import os
import subprocess
import sys

import pytest

from gpu_runner.config import RunnerConfig
from gpu_runner.worker import app, build_worker, evaluation_worker, gpu_indices, worker_processes


def _config(device: str) -> dict:
    pool = "cpu" if device == "cpu" else "h200"
    return {"name": f"node-{pool}", "pool": pool, "queue": f"pool.{pool}", "device": device,
            "broker_url": "redis://broker.example:6379/0", "soft_time_limit_s": 100, "time_limit_s": 120,
            "visibility_timeout_s": 10800, "keepalive_s": 30, "heartbeat_s": 30}


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_a_cpu_pool_gets_one_worker_on_its_queue():
    [worker] = worker_processes(config=_config("cpu"), site_url="http://site", secret="khr_s", pool_workers=None,
                                loglevel="info")
    assert _option(worker.argv, "-Q") == "pool.cpu"
    assert _option(worker.argv, "-c") == "1" and _option(worker.argv, "--prefetch-multiplier") == "1"
    assert _option(worker.argv, "-P") == "prefork"  # time limits and worker-lost detection need it
    assert worker.env["CUDA_VISIBLE_DEVICES"] == ""
    assert worker.env["KERNELHUB_RUNNER_TOKEN"] == "khr_s" and worker.env["KERNELHUB_SITE_URL"] == "http://site"
    assert worker.env["KERNELHUB_BROKER_URL"] == "redis://broker.example:6379/0"
    assert worker.env["KERNELHUB_SOFT_TIME_LIMIT_S"] == "100" and worker.env["KERNELHUB_TIME_LIMIT_S"] == "120"
    # The secret never appears on the command line, where any local user could read it.
    assert "khr_s" not in " ".join(worker.argv)


def test_pool_workers_sets_the_number_of_cpu_workers():
    workers = worker_processes(config=_config("cpu"), site_url="http://site", secret="s", pool_workers=3,
                               loglevel="info")
    names = [_option(w.argv, "-n") for w in workers]
    assert len(workers) == 3 and len(set(names)) == 3


def test_the_task_is_late_acked_and_requeued_if_its_worker_dies():
    task = app.tasks["gpu_runner.evaluate_job"]
    assert task.acks_late and task.reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_time_limit > app.conf.task_soft_time_limit
    assert app.conf.broker_transport_options["visibility_timeout"] > app.conf.task_time_limit


def test_a_cuda_pool_on_a_host_without_gpu_refuses_to_start():
    if gpu_indices():
        pytest.skip("this host has a GPU")
    with pytest.raises(SystemExit, match="no GPU"):
        worker_processes(config=_config("cuda"), site_url="http://site", secret="s", pool_workers=None,
                         loglevel="info")


@pytest.mark.cuda
def test_a_cuda_pool_gets_one_worker_per_gpu_pinned():
    gpus = gpu_indices()
    if not gpus:
        pytest.skip("no NVIDIA GPU on this host")
    workers = worker_processes(config=_config("cuda"), site_url="http://site", secret="s", pool_workers=None,
                               loglevel="info")
    *evaluators, builder = workers
    assert [w.env["CUDA_VISIBLE_DEVICES"] for w in evaluators] == [str(i) for i in gpus]
    assert all(_option(w.argv, "-Q") == "pool.h200" for w in evaluators)
    # The build slots: no GPU, the pool's build queue, keyed for the GPUs' architecture.
    assert builder.builds and builder.env["CUDA_VISIBLE_DEVICES"] == "" and builder.queue == "pool.h200.build"
    assert builder.env["TORCH_CUDA_ARCH_LIST"]
    one = worker_processes(config=_config("cuda"), site_url="http://site", secret="s", pool_workers=1,
                           loglevel="info")
    assert [w.env["CUDA_VISIBLE_DEVICES"] for w in one if not w.builds] == [str(gpus[0])]


def test_a_gpus_worker_takes_gpu_jobs_at_once_and_a_cpu_worker_one():
    def worker(pin: str, jobs: str | None):
        settings = RunnerConfig.from_env({"KERNELHUB_GPU_JOBS": jobs} if jobs else {})
        return evaluation_worker(config=_config("cuda" if pin else "cpu"), site_url="http://site", secret="khr_s",
                                 loglevel="info", host="gpu-host", pin=pin, index=0, settings=settings)

    gpu = worker("1", None)  # one at a time by default (docs/RUNNERS.md, "Several jobs per GPU")
    assert _option(gpu.argv, "-c") == "1" and _option(gpu.argv, "--prefetch-multiplier") == "1"
    assert gpu.env["CUDA_VISIBLE_DEVICES"] == "1" and _option(gpu.argv, "-n") == "node-h200-gpu1@gpu-host"
    assert _option(worker("0", "3").argv, "-c") == "3" and _option(worker("0", "2").argv, "-c") == "2"
    assert _option(worker("", "3").argv, "-c") == "1"  # a CPU worker's timing would share the others' cores
    with pytest.raises(ValueError, match="KERNELHUB_GPU_JOBS='0': an integer of 1 or more is expected"):
        RunnerConfig.from_env({"KERNELHUB_GPU_JOBS": "0"})


def test_a_cuda_pools_build_slots_take_its_build_queue_with_no_gpu():
    def settings(slots: str) -> RunnerConfig:
        return RunnerConfig.from_env({"KERNELHUB_BUILD_SLOTS": slots})

    builder = build_worker(config=_config("cuda"), site_url="http://site", secret="khr_s", loglevel="info",
                           host="gpu-host", settings=settings("3"))
    assert builder is not None and builder.builds
    assert _option(builder.argv, "-Q") == "pool.h200.build" and _option(builder.argv, "-c") == "3"
    assert builder.env["CUDA_VISIBLE_DEVICES"] == "" and builder.env["KERNELHUB_PRESTART"] == "false"
    assert "khr_s" not in " ".join(builder.argv)
    assert build_worker(config=_config("cuda"), site_url="http://site", secret="s", loglevel="info",
                        host="gpu-host", settings=settings("0")) is None


def test_serve_refuses_a_bad_setting_before_it_starts():
    # Read once as serve starts (gpu_runner/config.py): the operator is told which variable and what to write.
    env = {**os.environ, "KERNELHUB_BUILD_SLOTS": "-1"}
    done = subprocess.run([sys.executable, "-m", "gpu_runner", "serve", "--site", "http://127.0.0.1:9",
                           "--token", "khr_x"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "error: KERNELHUB_BUILD_SLOTS='-1': an integer of 0 or more is expected" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_build_hint_is_taken_off_the_queue_at_once():
    # Lost with its worker, a hint only means the evaluation builds for itself: nothing to redeliver.
    assert not app.tasks["gpu_runner.prebuild_job"].acks_late
