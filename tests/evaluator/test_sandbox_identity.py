"""Who the sandboxed child is and what it can see of the host's evaluator files, tried directly in a child
(no guards in the way): an unprivileged uid of its own, and nothing of the work base, the caches or the
runner's home but its own directory."""

import os
import shutil
import time
from pathlib import Path

import pytest

from gpu_runner import sandbox

PROBE = """
import os, socket, sys
from gpu_runner.sandbox import lockdown
from gpu_runner.protocol import Channel

channel = Channel(socket.socket(fileno=int(sys.argv[-1])))
report = {"lockdown": lockdown(os.environ["KERNELHUB_LOCKDOWN"]), "uid": os.getuid(), "euid": os.geteuid()}
channel.recv()  # the parent has put the child's library in place meanwhile
seen = {}
for path in [os.path.dirname(os.getcwd()), CACHE, CACHE + "/builds", HOME]:
    try:
        seen[path] = sorted(os.listdir(path))
    except OSError as e:
        seen[path] = e.strerror
report["seen"] = seen
read = {}
for path in [SIBLING + "/ref_trial_0.pt", CACHE + "/builds/abc/lib.so", "ext/abc/lib.so"]:
    try:
        with open(path) as f:
            read[path] = f.read()
    except OSError as e:
        read[path] = e.strerror
report["read"] = read
import torch  # the interpreter and its packages are still reachable
report["torch"] = torch.ones(2).sum().item()
with open("mine.txt", "w") as f:
    report["own_dir_writable"] = f.write("x") == 1
channel.send(report)
"""


@pytest.fixture
def host_cache(monkeypatch):
    """A cache outside /tmp (under /tmp the child would only see its private tmpfs anyway), with a sibling
    evaluation's file and another submission's build planted in it."""
    cache = Path(__file__).resolve().parents[2] / "var" / f"identity-test-{os.getpid()}"
    (cache / "builds" / "abc").mkdir(parents=True, exist_ok=True)
    (cache / "builds" / "abc" / "lib.so").write_text("OTHER SUBMISSION")
    monkeypatch.setenv("KERNELHUB_CACHE_DIR", str(cache))
    monkeypatch.delenv("KERNELHUB_WORK_DIR", raising=False)
    monkeypatch.setattr(sandbox, "work_base", lambda: _made(cache / "work"))
    yield cache
    shutil.rmtree(cache, ignore_errors=True)


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o711)
    return path


def _run_probe(cache: Path) -> tuple[dict, dict, dict]:
    sibling = sandbox.new_workdir("eager-")
    (sibling / "ref_trial_0.pt").write_text("EXPECTED OUTPUTS")
    workdir = sandbox.new_workdir("solution-")
    script = f"CACHE, HOME, SIBLING = {str(cache)!r}, {str(Path.home())!r}, {str(sibling)!r}\n" + PROBE
    child = sandbox.spawn(["-c", script], workdir=workdir,
                          limits=sandbox.Limits(wall_s=120, cpu_s=120, memory_bytes=None))
    try:
        # What the parent adds to the child's directory after the lockdown (as _on_build does) stays visible.
        (workdir / "ext" / "abc").mkdir(parents=True)
        (workdir / "ext" / "abc" / "lib.so").write_text("OWN BUILD")
        child.channel.send({"go": True})
        report = child.channel.recv(deadline=time.monotonic() + 120)
        observed = sandbox.observed_isolation(child)
    finally:
        sandbox.kill(child)
        shutil.rmtree(sibling, ignore_errors=True)
    return report, observed, child.isolation


def test_it_runs_the_child_as_an_unprivileged_uid_of_its_own(host_cache):
    if not sandbox.unshare_works() or os.geteuid() != 0:
        pytest.skip("needs root and namespaces (elsewhere the child keeps the runner's uid, see the next test)")
    report, observed, isolation = _run_probe(host_cache)
    assert report["uid"] == report["euid"] == observed["uid"] >= sandbox.SANDBOX_UID_BASE, (report, observed)
    assert set(observed["uids"]) == {observed["uid"]}, observed
    assert str(observed["uid"]) in isolation["identity"] and "uid 0 kept" not in report["lockdown"]["identity"]
    assert observed["capabilities_dropped"] and observed["no_new_privs"]
    assert report["torch"] == 2.0 and report["own_dir_writable"] is True


def test_it_says_whose_uid_the_child_keeps_where_it_cannot_switch(host_cache, monkeypatch):
    monkeypatch.setenv("KERNELHUB_NO_NAMESPACES", "1")
    sandbox.unshare_works.cache_clear()
    try:
        child = sandbox.spawn(["-c", "import time; time.sleep(30)"], workdir=sandbox.new_workdir("plain-"),
                              limits=sandbox.Limits(wall_s=60, cpu_s=60, memory_bytes=None))
        try:
            observed = sandbox.observed_isolation(child)
        finally:
            sandbox.kill(child)
    finally:
        sandbox.unshare_works.cache_clear()
    assert observed["uid"] == os.getuid()
    assert child.isolation["identity"].startswith(f"the runner's uid {os.geteuid()}: no namespaces")


def test_it_hides_other_evaluations_the_caches_and_the_runners_home(host_cache):
    if not sandbox.unshare_works():
        pytest.skip("unshare is not permitted here: no mount namespace to hide anything in")
    report, _, _ = _run_probe(host_cache)
    seen, read = report["seen"], report["read"]
    workdir_name = [name for name in seen[str(host_cache / "work")]]
    assert len(workdir_name) == 1 and workdir_name[0].startswith("solution-"), seen  # its own, no sibling
    assert seen[str(host_cache)] == ["work"], seen  # only the path down to its own directory
    assert seen[str(host_cache / "builds")] == "No such file or directory", seen
    assert "OTHER SUBMISSION" not in str(report) and "EXPECTED OUTPUTS" not in str(report), report
    assert read["ext/abc/lib.so"] == "OWN BUILD", read
    assert report["torch"] == 2.0 and report["own_dir_writable"] is True
    assert sorted(report["lockdown"]["hidden"]) == sorted(sandbox.hidden_paths()), report["lockdown"]
