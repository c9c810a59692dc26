"""One multi-GPU host serving one worker per GPU, shown without the site: runner hosts do not install Django.

A stand-in for the site's runner API (stdlib HTTP server, the endpoints and answers of docs/ARCHITECTURE.md)
lets the real `python -m gpu_runner serve` start: it prints which worker got which GPU, calibrates each GPU,
starts one Celery worker per GPU pinned with CUDA_VISIBLE_DEVICES, and heartbeats. Jobs are then sent to the
pool's queue through Celery, exactly as the site sends them; the script prints which GPU (by NVML UUID) each
result was measured on, the calibrations and the heartbeat telemetry, and writes them all as JSON.

    python benchmarks/two_gpu_serve.py [--broker URL] [--jobs 4] [--out two_gpu_serve.json]

The broker defaults to kombu's filesystem transport in a temporary directory (no server needed); pass a Redis
URL where one runs. Only the runner side is real here: claims, stages and results land in this script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOKEN = "khr_two-gpu-demo"
RUNNER = "demo-runner"
# An honest Triton solution: no nvcc build, so the demonstration spends its time serving, not compiling.
EXAMPLES = {"cuda": (REPO / "problems/gpu/level1/gelu_erf.py", REPO / "examples/gpu/triton/gelu_erf.py"),
            "cpu": (REPO / "problems/cpu/level1/gelu_erf_cpu.py", REPO / "examples/cpu/cpp/gelu_erf_cpu.py")}


class StandInSite:
    """What the site's runner API records: heartbeats, calibrations, and each job's claim, stages and result."""

    def __init__(self, broker_url: str, device: str) -> None:
        self.broker_url, self.device = broker_url, device
        self.pool = "h200" if device == "cuda" else "cpu"
        self.lock = threading.Lock()
        self.heartbeats: list[dict[str, Any]] = []
        self.calibrations: list[dict[str, Any]] = []
        self.jobs: dict[int, dict[str, Any]] = {}

    def config(self) -> dict[str, Any]:
        return {"name": RUNNER, "pool": self.pool, "queue": f"pool.{self.pool}", "device": self.device,
                "languages": ["cuda", "triton", "cupy", "cpp"], "broker_url": self.broker_url,
                "visibility_timeout_s": 3 * 3600, "soft_time_limit_s": 1800, "time_limit_s": 2160,
                "keepalive_s": 30, "heartbeat_s": 5, "is_draining": False, "is_disabled": False}

    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if method == "GET" and path == "/api/v1/runners/me/":
                return 200, self.config()
            if path == "/api/v1/runners/heartbeat/":
                self.heartbeats.append({"at": time.time(), **body})
                return 200, {"name": RUNNER, "last_heartbeat_at": "now", "is_draining": False}
            if path == "/api/v1/runners/calibration/":
                self.calibrations.append(body)
                return 201, {"id": len(self.calibrations), "is_outlier": False, "comparison": {},
                             "is_draining": False, "drain_reason": ""}
            match = re.fullmatch(r"/api/v1/jobs/(\d+)/(claim|stage|result|fail)/", path)
            if match:
                job = self.jobs.setdefault(int(match[1]), {"stages": []})
                what = match[2]
                if what == "claim":
                    if job.get("claimed"):
                        return 409, {"error": {"code": "conflict", "message": "claimed already", "fields": {}}}
                    job["claimed"] = time.time()
                elif what == "stage":
                    if not job["stages"] or job["stages"][-1] != body.get("stage"):
                        job["stages"].append(body.get("stage"))
                else:
                    job[what] = body
                return 200, {"evaluation_id": int(match[1]), "status": "running", "stage": "", "attempt": 1}
            return 404, {"error": {"code": "not_found", "message": path, "fields": {}}}


def serve_site(site: StandInSite) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            if self.headers.get("Authorization") != f"Runner {TOKEN}":
                status, answer = 401, {"error": {"code": "auth", "message": "bad secret", "fields": {}}}
            else:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                status, answer = site.handle(method, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._answer("POST")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def gpu_uuids() -> dict[str, int]:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no NVML: a CPU host (the --device cpu rehearsal)
        return {}
    out = {}
    for i in range(pynvml.nvmlDeviceGetCount()):
        uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))
        out[uuid.decode() if isinstance(uuid, bytes) else uuid] = i
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default="", help="Celery broker URL (default: filesystem transport in a temp dir)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--device", choices=sorted(EXAMPLES), default="cuda",
                        help="cpu: a rehearsal of the plumbing on a host without GPU (one worker)")
    parser.add_argument("--problem", type=Path, default=None)
    parser.add_argument("--solution", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=540)
    parser.add_argument("--out", type=Path, default=Path("two_gpu_serve.json"))
    args = parser.parse_args()
    args.problem = (args.problem or EXAMPLES[args.device][0]).resolve()
    args.solution = (args.solution or EXAMPLES[args.device][1]).resolve()
    args.out = args.out.resolve()  # before the chdir below

    workdir = Path(tempfile.mkdtemp(prefix="two-gpu-serve-"))
    broker = args.broker
    if not broker:
        # The filesystem transport reads data_in and writes data_out of the working directory: one folder
        # for both makes every process of this host (serve's workers and this script) share one queue.
        (workdir / "data_in").mkdir()
        (workdir / "data_out").symlink_to(workdir / "data_in")
        broker = "filesystem://"
        os.chdir(workdir)
    site = StandInSite(broker, args.device)
    server = serve_site(site)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    log_path = workdir / "serve.log"
    # The repository first, then whatever the host set (a --target install of kernelguard, say).
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    serve = subprocess.Popen([sys.executable, "-m", "gpu_runner", "serve", "--site", url, "--token", TOKEN,
                              "--shutdown-grace", "10"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + args.timeout
        # Serve calibrates every GPU before it starts the workers: wait for the heartbeat saying they live.
        while time.monotonic() < deadline and serve.poll() is None:
            live = site.heartbeats[-1]["telemetry"]["workers"] if site.heartbeats else []
            if live and all(w["alive"] for w in live):
                break
            time.sleep(1)
        from gpu_runner.worker import app

        app.conf.broker_url = broker
        problem, solution = args.problem.read_text(), args.solution.read_text()
        from gpu_runner.formats import detect_language

        language = detect_language(solution)
        for i in range(1, args.jobs + 1):
            job = {"evaluation_id": i, "job_token": f"token-{i}", "attempt": 1, "problem_slug": args.problem.stem,
                   "problem_source": problem, "solution_source": solution, "language": language,
                   "device": args.device, "seed": i}
            app.send_task("gpu_runner.evaluate_job", kwargs={"job": job}, queue=f"pool.{site.pool}")
        while time.monotonic() < deadline and serve.poll() is None:
            if sum(1 for j in site.jobs.values() if "result" in j or "fail" in j) >= args.jobs:
                break
            time.sleep(2)
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            serve.kill()
        log.close()
        server.shutdown()

    by_uuid = gpu_uuids()
    serve_log = log_path.read_text(errors="replace")
    report: dict[str, Any] = {
        "serve_lines": [line for line in serve_log.splitlines() if line.startswith(("worker ", "calibration "))],
        "calibrations": site.calibrations,
        "last_heartbeat": site.heartbeats[-1] if site.heartbeats else None,
        "jobs": [],
    }
    for evaluation_id, job in sorted(site.jobs.items()):
        result = (job.get("result") or {}).get("result") or {}
        device = result.get("device") or {}
        report["jobs"].append({"evaluation_id": evaluation_id, "stages": job["stages"],
                               "verdict": result.get("verdict"), "runtime_us": result.get("runtime_us"),
                               "gpu_uuid": device.get("uuid"), "gpu_index": by_uuid.get(device.get("uuid", "")),
                               "gpu_name": device.get("name"), "failed": job.get("fail")})
    args.out.write_text(json.dumps(report, indent=1, default=str))
    for line in report["serve_lines"]:
        print(line)
    for row in report["jobs"]:
        print(f"job {row['evaluation_id']}: {row['verdict']} {row['runtime_us']} us on GPU {row['gpu_index']} "
              f"({row['gpu_name']}, {row['gpu_uuid']})")
    print(f"serve log: {log_path}; report: {args.out.resolve()}")
    used = {row["gpu_index"] for row in report["jobs"] if row["gpu_index"] is not None}
    done = sum(1 for row in report["jobs"] if row["verdict"])
    return 0 if done == args.jobs and len(used) >= min(2, len(by_uuid)) else 1


if __name__ == "__main__":
    sys.exit(main())
