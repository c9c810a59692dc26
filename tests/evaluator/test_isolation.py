"""What the sandbox keeps from the code in a child, tried directly in a sandboxed child (no guards in the
way: this is the barrier that holds when a solution gets past them)."""

import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from gpu_runner import sandbox

PROBE = """
import os, socket, sys
from gpu_runner.sandbox import lockdown
from gpu_runner.protocol import Channel

channel = Channel(socket.socket(fileno=int(sys.argv[-1])))
if os.environ.get("KERNELHUB_LOCKDOWN"):
    lockdown(os.environ["KERNELHUB_LOCKDOWN"])
report = {"secret": os.getenv("KERNELHUB_TEST_RUNNER_SECRET")}
for name, path in [("cache", CACHE + "/planted-by-child"), ("tmp", "/tmp/kernelhub-planted-by-child"),
                   ("own", "mine.txt")]:
    try:
        with open(path, "w") as f:
            f.write("x")
        report[name] = True
    except OSError:
        report[name] = False
try:
    socket.create_connection((HOST, PORT), timeout=3).close()
    report["network"] = True
except OSError:
    report["network"] = False
channel.send(report)
"""


def test_it_keeps_the_environment_the_filesystem_and_the_network_from_the_child(monkeypatch, tmp_path):
    if not sandbox.unshare_works():
        pytest.skip("unshare is not permitted here: no namespaces to test")
    monkeypatch.setenv("KERNELHUB_TEST_RUNNER_SECRET", "hunter2")
    # A cache outside /tmp, as on a runner host (under /tmp the child would only see its private tmpfs).
    cache = Path(__file__).resolve().parents[2] / "var" / f"sandbox-test-{os.getpid()}"
    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("KERNELHUB_CACHE_DIR", str(cache))
    monkeypatch.delenv("KERNELHUB_WORK_DIR", raising=False)
    # A server on the host the child must not reach.
    server = socket.create_server(("127.0.0.1", 0))
    host, port = server.getsockname()
    script = f"CACHE, HOST, PORT = {str(cache)!r}, {host!r}, {port}\n" + PROBE
    workdir = sandbox.new_workdir("probe-")
    child = sandbox.spawn(["-c", script], workdir=workdir,
                          limits=sandbox.Limits(wall_s=60, cpu_s=60, memory_bytes=None))
    try:
        report = child.channel.recv(deadline=time.monotonic() + 60)
        observed = sandbox.observed_isolation(child)
    finally:
        sandbox.kill(child)
        server.close()
    assert report == {"secret": None, "cache": False, "tmp": True, "own": True, "network": False}, report
    assert not (cache / "planted-by-child").exists()
    assert not Path("/tmp/kernelhub-planted-by-child").exists()  # it wrote to a private tmpfs
    assert observed["own_net_namespace"] and observed["own_pid_namespace"] and observed["root_read_only"]
    assert observed["capabilities_dropped"] and observed["no_new_privs"]
    assert os.environ["KERNELHUB_TEST_RUNNER_SECRET"] == "hunter2"
    shutil.rmtree(cache, ignore_errors=True)


def test_every_child_has_one_cuda_hardware_queue(monkeypatch, tmp_path):
    # Work on a stream of the solution's own must queue behind the start event (sandbox.CUDA_CONNECTIONS_VAR): the
    # host's own setting does not reach the child; the runner's knob for measurements does.
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8")
    monkeypatch.delenv(sandbox.CUDA_CONNECTIONS_VAR, raising=False)
    assert sandbox.child_env(tmp_path, "m")["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    monkeypatch.setenv(sandbox.CUDA_CONNECTIONS_VAR, "8")
    assert sandbox.child_env(tmp_path, "m")["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"
