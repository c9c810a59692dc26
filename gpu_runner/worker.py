"""The runner host's Celery side: the task `gpu_runner.evaluate_job`, and `python -m gpu_runner serve`.

The site sends `gpu_runner.evaluate_job` to the queue `pool.<slug>` with one kwarg `job` (docs/ARCHITECTURE.md).
This module is a Celery app of its own: runner hosts do not install the site, and it imports nothing from it.

`serve` asks the site who this runner is (GET /api/v1/runners/me/: pool, queue, broker, limits), then starts one
Celery worker per GPU, pinned with CUDA_VISIBLE_DEVICES (one worker for a CPU pool), each with prefetch 1,
acks_late and reject_on_worker_lost, so that a job is taken off the queue only once it is finished and comes
back if its worker dies. It heartbeats for the host and restarts a worker that exits.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from gpu_runner import calibration, runner_core  # calibration: its clock of the last measurement starts now
from gpu_runner.config import RunnerConfig
from gpu_runner.context import SPARES_SETTLE_S
from gpu_runner.contract import PREBUILD_KEYS, PREBUILD_TASK, Job, build_queue
from gpu_runner.site_client import SiteClient, SiteError, SiteRefused

logger = logging.getLogger("gpu_runner.worker")


# This worker process's settings (config.py), read once as Celery imports this module, and passed down.
SETTINGS = RunnerConfig.from_env()
SOFT_TIME_LIMIT_S = SETTINGS.soft_time_limit_s

app = Celery("gpu_runner")
app.conf.update(
    broker_url=SETTINGS.broker_url or None,
    broker_connection_retry_on_startup=True,
    # Longer than the hard time limit, so the broker never hands a running job to a second worker.
    broker_transport_options={"visibility_timeout": SETTINGS.visibility_timeout_s},
    task_ignore_result=True,
    result_backend=None,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    worker_concurrency=1,
    task_soft_time_limit=SOFT_TIME_LIMIT_S,
    task_time_limit=SETTINGS.hard_time_limit_s(),
)


_warm_pools: dict[str, Any] = {}


def warm_pool(device: str) -> Any:
    """This worker process's pre-started evaluation processes for `device` (gpu_runner/warm.py); None when
    KERNELHUB_PRESTART=false. Each job takes them and refill() starts the next ones."""
    from gpu_runner import warm

    if not SETTINGS.prestart:
        return None
    pool = _warm_pools.get(device)
    if pool is None:
        pool = _warm_pools[device] = warm.WarmPool(device)
        atexit.register(pool.close)
    return pool


@worker_process_init.connect
def _prestart(**_: Any) -> None:
    """A worker started by `serve` pre-starts its first evaluation's processes before any job arrives."""
    if not SETTINGS.worker_label:
        return
    pool = warm_pool("cuda" if os.environ.get("CUDA_VISIBLE_DEVICES") else "cpu")
    if pool is not None:
        pool.refill()


def run_job(client: SiteClient, job: dict[str, Any], *, keepalive_s: float = 30.0) -> str:
    """Claim, evaluate with gpu_runner.evaluate, report (runner_core.run_job). Returns refused, done, lost or
    gave_up."""

    def evaluate_here(checked: Job, report: Callable[[str], None]) -> dict[str, Any]:
        # The evaluator's first step, before any process of the solution starts: the static pre-screen (bounded in
        # a child process by gpu_runner/anticheat.py, so the keep-alive thread goes on meanwhile).
        report("prescreen")
        # Imported here: the evaluator pulls in torch, which the site's tests of this module do not need.
        from gpu_runner.evaluate import evaluate

        pool = warm_pool(checked.device) if checked.device in ("cpu", "cuda") else None
        if pool is not None:
            pool.refill()  # started before this job in the normal case; this replaces any that died since
        return evaluate(checked.problem_source, checked.solution_source, device=checked.device,
                        seed=checked.seed, on_stage=report, pool=pool, settings=SETTINGS)

    return runner_core.run_job(
        client, job, evaluate_here, keepalive_s=keepalive_s, failure_label="evaluator error", log=logger,
        timeout_message=(f"The evaluation took longer than this runner's limit of {SOFT_TIME_LIMIT_S} s "
                         "(building, checking and timing together)."))


@app.task(name="gpu_runner.evaluate_job", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def evaluate_job(job: dict[str, Any]) -> str:
    client = SiteClient(SETTINGS.site_url, SETTINGS.runner_token)
    try:
        outcome = run_job(client, job, keepalive_s=SETTINGS.keepalive_s)
        label = SETTINGS.worker_label
        pool = _warm_pools.get(str(job.get("device")))
        if label:
            if pool is not None and calibration.due(SETTINGS.calibrate_every_s):
                # The next job's processes, started during this one, have finished starting.
                pool.settle(SPARES_SETTLE_S)
            # Between two jobs this worker's GPU is idle: the only time a measurement is not disturbed.
            calibration.after_job(client, device=str(job.get("device", "cpu")), worker=label,
                                  every_s=SETTINGS.calibrate_every_s)
        if pool is not None:
            # The next job's processes start now, after the calibration: they import torch while no job runs.
            pool.refill()
        return outcome
    finally:
        client.close()


@app.task(name=PREBUILD_TASK, acks_late=False, ignore_result=True)
def prebuild_job(job: dict[str, Any]) -> str:
    """A build hint (gpu_runner/prebuild.py): build the solution's extensions into this host's cache, no GPU.
    Taken off the queue at once: a hint lost with its worker only means the evaluation builds for itself."""
    if not isinstance(job, dict) or any(not isinstance(job.get(k), (str, int)) for k in PREBUILD_KEYS):
        logger.warning("A build hint without %s: ignored", ", ".join(PREBUILD_KEYS))
        return "ignored"
    from gpu_runner import prebuild

    record = prebuild.build_ahead(str(job["problem_source"]), str(job["solution_source"]), device=str(job["device"]),
                                  settings=SETTINGS)
    made = [b for b in record["builds"] if not b["cached"]]
    logger.info("Build ahead for evaluation %s: %s in %.1f s, %d build(s), %d made now%s", job["evaluation_id"],
                record["outcome"], record["seconds"], len(record["builds"]), len(made),
                f" ({record.get('verdict', '')}: {record.get('message', '')[:200]})" if record["outcome"] != "built"
                else "")
    return str(record["outcome"])


# --- python -m gpu_runner serve ----------------------------------------------------------------------------

def gpu_indices() -> list[int]:
    """The GPUs NVML sees (all of them: CUDA_VISIBLE_DEVICES of this process is ignored on purpose)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return list(range(pynvml.nvmlDeviceGetCount()))
    except Exception:  # noqa: BLE001 - no driver or no NVML: ask torch
        pass
    try:
        import torch

        return list(range(torch.cuda.device_count()))
    except Exception:  # noqa: BLE001
        return []


def host_info() -> dict[str, Any]:
    from gpu_runner import EVALUATOR_VERSION

    return {"hostname": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "cpu_count": os.cpu_count(), "evaluator_version": EVALUATOR_VERSION}


def _cuda_version(value: int) -> str:
    return f"{value // 1000}.{value % 1000 // 10}"


def gpu_telemetry() -> list[dict[str, Any]]:
    """A short NVML reading per GPU for the heartbeat (the evaluator records its own at timing); `busy_fraction`
    covers the time since the previous call."""
    from gpu_runner import sysinfo

    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception:  # noqa: BLE001
        return []
    readings = []
    for index in range(count):
        reading: dict[str, Any] = {"index": index}
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            reading["name"] = name.decode() if isinstance(name, bytes) else name
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            reading["memory_used_mib"] = memory.used // 2**20
            reading["memory_total_mib"] = memory.total // 2**20
            reading["temperature_c"] = pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
            reading["sm_clock_mhz"] = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
            reading["power_w"] = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000
            reading["utilization_pct"] = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
        except Exception as e:  # noqa: BLE001 - a reading this GPU lacks stays out
            reading["error"] = str(e)
        # Read one by one: an older driver lacking one must not hide the others.
        extras = {
            "driver_version": pynvml.nvmlSystemGetDriverVersion,
            # The newest CUDA the driver supports: 12040 -> "12.4".
            "cuda_driver_version": lambda: _cuda_version(pynvml.nvmlSystemGetCudaDriverVersion()),
            # A bit mask (NVML clocks event reasons): 0 or 1 (idle) is healthy; thermal or power bits are not.
            "throttle_reasons": lambda i=index: int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(
                pynvml.nvmlDeviceGetHandleByIndex(i))),
        }
        for key, read in extras.items():
            try:
                value = read()
                reading[key] = value.decode() if isinstance(value, bytes) else value
            except Exception:  # noqa: BLE001 - see above
                pass
        # The fraction of the time since the last reading that the GPU ran kernels (sysinfo.gpu_busy: NVML's
        # utilization samples over the interval, not one instant).
        reading.update(sysinfo.gpu_busy(index) or {})
        readings.append(reading)
    return readings


class WorkerProcess:
    def __init__(self, label: str, argv: list[str], env: dict[str, str], *, builds: bool = False) -> None:
        self.label, self.argv, self.env = label, argv, env
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.started_at = 0.0
        self.name = argv[argv.index("-n") + 1]
        self.queue = argv[argv.index("-Q") + 1]  # the pool's queue it serves (its build queue for the builder)
        self.builds = builds  # the build slots' worker (gpu_runner/prebuild.py): no GPU, not calibrated

    def start(self, queue: str | None = None) -> None:
        """queue: the queue to consume from the start (a draining runner's workers get a private one)."""
        self.argv[self.argv.index("-Q") + 1] = queue if queue is not None else self.queue
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(self.argv, env=self.env)
        logger.info("Started worker %s (pid %s)", self.label, self.process.pid)

    def state(self) -> dict[str, Any]:
        alive = self.process is not None and self.process.poll() is None
        return {"label": self.label, "pid": self.process.pid if self.process else None, "alive": alive,
                "restarts": self.restarts, "cuda_visible_devices": self.env.get("CUDA_VISIBLE_DEVICES", "")}


def worker_processes(*, config: dict[str, Any], site_url: str, secret: str, pool_workers: int | None,
                     loglevel: str) -> list[WorkerProcess]:
    if config["device"] == "cuda":
        gpus = gpu_indices()
        if not gpus:
            raise SystemExit(f"Pool {config['pool']} evaluates on CUDA, but this host has no GPU that NVML or torch "
                             "can see. Run this runner on a GPU host, or create a runner of the cpu pool.")
        pins = [str(i) for i in (gpus[:pool_workers] if pool_workers else gpus)]
    else:
        pins = [""] * (pool_workers or 1)
    host = socket.gethostname()
    workers = [evaluation_worker(config=config, site_url=site_url, secret=secret, loglevel=loglevel, host=host,
                                 pin=pin, index=index) for index, pin in enumerate(pins)]
    if config["device"] == "cuda":
        builder = build_worker(config=config, site_url=site_url, secret=secret, loglevel=loglevel, host=host)
        if builder is not None:
            workers.append(builder)
    return workers


def evaluation_worker(*, config: dict[str, Any], site_url: str, secret: str, loglevel: str, host: str, pin: str,
                      index: int, settings: RunnerConfig | None = None) -> WorkerProcess:
    """The Celery worker of one GPU (`pin`: its index for CUDA_VISIBLE_DEVICES), or of the CPU (`pin` empty).
    settings: serve's (this process's)."""
    label = f"gpu{pin}" if pin else f"cpu{index}"
    env = _worker_env(config, site_url, secret, {
        "KERNELHUB_KEEPALIVE_S": str(config["keepalive_s"]),
        # One GPU per worker; a CPU worker sees none, so nothing it runs can reach a GPU.
        "CUDA_VISIBLE_DEVICES": pin,
        "KERNELHUB_WORKER_LABEL": label,
    })
    # On a GPU, KERNELHUB_GPU_JOBS jobs at once (1 by default; docs/RUNNERS.md, "Several jobs per GPU"): the device
    # lock (gpulock.py) times one alone while the others load and check, and the memory ledger (memory_ledger.py)
    # plans their memory together. A CPU worker takes one: its timing would share the cores the others' work uses.
    jobs = (settings or SETTINGS).gpu_jobs if pin else 1
    return WorkerProcess(label, _celery_argv(config["queue"], jobs, f"{config['name']}-{label}@{host}", loglevel),
                         env)


def build_worker(*, config: dict[str, Any], site_url: str, secret: str, loglevel: str,
                 host: str, settings: RunnerConfig | None = None) -> WorkerProcess | None:
    """A CUDA pool's build slots (gpu_runner/prebuild.py): one Celery worker with KERNELHUB_BUILD_SLOTS processes on
    the pool's build queue, seeing no GPU; its builds are keyed for the GPUs' architecture, read here through NVML,
    so that the evaluations find them. None with KERNELHUB_BUILD_SLOTS=0. settings: serve's (this process's)."""
    from gpu_runner import builds

    slots = (settings or SETTINGS).build_slot_count()
    if slots == 0:
        return None
    env = _worker_env(config, site_url, secret, {
        "CUDA_VISIBLE_DEVICES": "",
        "TORCH_CUDA_ARCH_LIST": builds.cuda_arch_list(),
        "KERNELHUB_WORKER_LABEL": "",  # no warm pool, no calibration after a job
        "KERNELHUB_PRESTART": "false",
    })
    argv = _celery_argv(build_queue(config["queue"]), slots, f"{config['name']}-builds@{host}", loglevel)
    return WorkerProcess("builds", argv, env, builds=True)


def _worker_env(config: dict[str, Any], site_url: str, secret: str, own: dict[str, str]) -> dict[str, str]:
    """A worker's environment: serve's, the site's address, the runner's secret (never on the command line), the
    broker and the time limits from the site, then the worker's `own`."""
    env = dict(os.environ)
    env.update({
        "KERNELHUB_SITE_URL": site_url,
        "KERNELHUB_RUNNER_TOKEN": secret,
        "KERNELHUB_BROKER_URL": config["broker_url"],
        "KERNELHUB_SOFT_TIME_LIMIT_S": str(config["soft_time_limit_s"]),
        "KERNELHUB_TIME_LIMIT_S": str(config["time_limit_s"]),
        "KERNELHUB_VISIBILITY_TIMEOUT_S": str(config["visibility_timeout_s"]),
        **own,
    })
    return env


def _celery_argv(queue: str, concurrency: int, name: str, loglevel: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "gpu_runner.worker", "worker", "-Q", queue, "-c", str(concurrency),
            "-P", "prefork", "--prefetch-multiplier", "1", "--without-gossip", "--without-mingle", "-n", name,
            "-l", loglevel]


def startup_cleanup() -> dict[str, Any]:
    """What evaluations killed with an earlier run of this runner left: directories, processes (cleanup.py), and
    their memory reservations (memory_ledger.py). Logged; a failure is logged too, and the runner serves all the
    same (each evaluation sweeps again)."""
    from gpu_runner import cleanup, memory_ledger

    try:
        swept = cleanup.sweep(why="runner start")
        swept["reservations"] = memory_ledger.sweep()
    except Exception:  # noqa: BLE001 - see the docstring
        logger.exception("Start-up cleanup failed")
        return {}
    logger.info("Start-up cleanup: %d stale work directories removed, %d processes killed, %d memory reservations "
                "of dead evaluations dropped", len(swept["removed"]), len(swept["killed"]),
                len(swept["reservations"]))
    return swept


def serve_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_runner serve",
                                     description="Serve a KernelHub pool: one Celery worker per GPU (one for CPU).")
    parser.add_argument("--site", default=SETTINGS.site_url,
                        help="The site's base URL, e.g. https://kernelhub.example (env KERNELHUB_SITE_URL).")
    parser.add_argument("--token", default=SETTINGS.runner_token,
                        help="The runner's secret from `manage.py create_runner` (env KERNELHUB_RUNNER_TOKEN).")
    parser.add_argument("--pool-workers", type=int, default=None,
                        help="Worker processes: default one per GPU for a CUDA pool, one for the cpu pool.")
    parser.add_argument("--loglevel", default="info")
    parser.add_argument("--shutdown-grace", type=float, default=30.0,
                        help="Seconds a worker may take to finish its job on SIGTERM before it is stopped cold "
                             "(its job then goes back to the queue).")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not args.site or not args.token:
        parser.error("--site and --token are required (or KERNELHUB_SITE_URL and KERNELHUB_RUNNER_TOKEN).")
    if args.pool_workers is not None and args.pool_workers < 1:
        parser.error("--pool-workers must be 1 or more.")
    try:
        client = SiteClient(args.site, args.token, retry_for_s=300)
        config = client.me()
    except (ValueError, SiteError) as e:
        print(f"Cannot start: {e}", file=sys.stderr)
        return 2
    if config.get("is_disabled"):
        print(f"Runner {config['name']} is disabled on the site.", file=sys.stderr)
        return 2
    startup_cleanup()
    workers = worker_processes(config=config, site_url=args.site, secret=args.token,
                               pool_workers=args.pool_workers, loglevel=args.loglevel)
    logger.info("Runner %s serving %s (%s) with %d worker(s)", config["name"], config["queue"], config["device"],
                len(workers))
    names = {g.get("index"): g.get("name") for g in gpu_telemetry()}
    for worker in workers:
        pin = worker.env["CUDA_VISIBLE_DEVICES"]
        jobs = worker.argv[worker.argv.index("-c") + 1]
        where = (f"GPU {pin} ({names.get(int(pin), 'unknown model')}), {jobs} job(s) at once" if pin
                 else "the CPU (no GPU visible)")
        if worker.builds:
            where = (f"build slots: {jobs} at once on {worker.queue}, no GPU, "
                     f"arch {worker.env['TORCH_CUDA_ARCH_LIST'] or 'unknown'}")
        print(f"worker {worker.name} -> {where}, CUDA_VISIBLE_DEVICES={pin!r}", flush=True)
    _calibrate_at_start(client, config, workers)
    app.conf.broker_url = config["broker_url"]  # serve's own remote control of its workers (drains)
    try:
        draining = bool(client.me().get("is_draining"))  # the calibration may just have drained this runner
    except SiteError:
        draining = bool(config.get("is_draining"))

    stopping = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # A draining runner's workers consume a queue nobody sends to; resuming adds the pool's queue.
    private_queue = f"runner.{config['name']}"
    for worker in workers:
        worker.start(private_queue if draining else None)
    next_heartbeat = 0.0
    try:
        while not stopping.is_set():
            for worker in workers:
                if worker.process is not None and worker.process.poll() is not None:
                    # Restart at most once every 5 s, so a worker that cannot start does not spin.
                    if time.monotonic() - worker.started_at > 5:
                        logger.warning("Worker %s exited with %s; restarting it", worker.label,
                                       worker.process.returncode)
                        worker.restarts += 1
                        worker.start(private_queue if draining else None)
            if time.monotonic() >= next_heartbeat:
                next_heartbeat = time.monotonic() + float(config.get("heartbeat_s", 30))
                try:
                    answer = client.heartbeat(host_info=host_info(),
                                              telemetry={"workers": [w.state() for w in workers],
                                                         "gpus": gpu_telemetry()})
                    # Applied at every heartbeat, not only on a change seen here: serve may have missed a
                    # drain and resume in between, and both commands are idempotent.
                    changed = bool(answer.get("is_draining")) != draining
                    draining = bool(answer.get("is_draining"))
                    _set_consuming(workers, consume=not draining, log=changed)
                except SiteRefused as e:
                    logger.error("The site refused this runner's heartbeat (%s): stopping.", e.message)
                    stopping.set()
                except SiteError as e:
                    logger.warning("Heartbeat failed: %s", e)
            stopping.wait(1.0)
    finally:
        _stop_workers(workers, grace_s=args.shutdown_grace)
        client.close()
    return 0


def _calibrate_at_start(client: SiteClient, config: dict[str, Any], workers: list[WorkerProcess]) -> None:
    """Each worker's GPU measured before any job runs on it (gpu_runner/calibration.py); a failure is logged."""
    if SETTINGS.calibrate_every_s <= 0:
        return
    for worker in workers:
        if worker.builds:
            continue
        try:
            result = calibration.calibrate_in_subprocess(device=config["device"],
                                                         pin=worker.env["CUDA_VISIBLE_DEVICES"])
            answer = calibration.post(client, result, worker.label)
            print(f"calibration {worker.label}: copy {result['copy_bandwidth_gbps']:.0f} GB/s, fp32 "
                  f"{result['matmul_fp32_tflops']:.2f} TFLOP/s, bf16 {result['matmul_bf16_tflops']} TFLOP/s, "
                  f"reference {result['reference_kernel_us']:.1f} us"
                  f"{' (outlier: drained)' if answer.get('is_outlier') else ''}", flush=True)
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired, SiteError) as e:
            logger.warning("Calibration of %s failed: %s", worker.label, e)


def _set_consuming(workers: list[WorkerProcess], *, consume: bool, log: bool) -> None:
    """The site's drain flag, applied to our own workers, each on its queue (the dashboard tells them too, but a
    worker that was restarting then missed it). A draining runner's build slots stop taking hints too."""
    for queue in dict.fromkeys(w.queue for w in workers):
        names = [w.name for w in workers if w.queue == queue]
        try:
            if consume:
                app.control.add_consumer(queue, destination=names)
            else:
                app.control.cancel_consumer(queue, destination=names)
            if log:
                logger.info("%s %s on %s", "add_consumer" if consume else "cancel_consumer", queue, ", ".join(names))
        except Exception as e:  # noqa: BLE001 - the broker is down: the next change or restart applies it
            logger.warning("Could not tell the workers to %s: %s", "resume" if consume else "drain", e)


def _stop_workers(workers: list[WorkerProcess], *, grace_s: float) -> None:
    """SIGTERM (Celery finishes the job in hand), then SIGQUIT (cold: the unacked job returns to the queue)."""
    running = [w.process for w in workers if w.process is not None and w.process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for sig, wait_s in ((None, grace_s), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
        if sig is not None:
            for process in running:
                if process.poll() is None:
                    process.send_signal(sig)
            deadline = time.monotonic() + wait_s
        for process in running:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        if all(process.poll() is not None for process in running):
            return
