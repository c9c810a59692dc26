"""Spawning and killing the child processes that run untrusted code (and the trusted reference, the same way).

What is in force is recorded in every result (`isolation`), because it depends on the host:
- always: a fresh process per evaluation, its own session and process group, its own directory (cwd, HOME,
  TMPDIR and every compiler cache inside it), an allowlisted environment, rlimits, a wall-clock deadline that
  kills the whole group, a sweep for escaped descendants by a per-evaluation marker variable;
- where `unshare` works (root, or user namespaces allowed): new network, mount and PID namespaces. No network
  at all; every descendant dies with the child (PID namespace); and the harness, before any solution code
  runs, remounts every filesystem read-only except its own directory, puts fresh tmpfs on /tmp, /var/tmp
  and /dev/shm, hides the work base, the cache directory and the runner's home under empty tmpfs (other
  evaluations' directories, other submissions' builds and sources), switches to an unprivileged uid of its
  own and drops all capabilities (see `lockdown`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from gpu_runner import cleanup, config
from gpu_runner.cleanup import MARKER_VAR, cache_dir, work_base
from gpu_runner.protocol import Channel

# Variables of the runner a child may see; nothing else crosses (no tokens, no broker URL, no proxies).
ENV_ALLOWLIST = (
    "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "CC", "CXX",
    "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES", "KERNELHUB_HEAD_START_MAX_US", "KERNELHUB_WINDOW_DRAIN",
)
# One hardware queue per CUDA context in every child (CUDA_DEVICE_MAX_CONNECTIONS; the driver's default is 8). With
# several, a kernel that forward launches on a stream of its own (torch's, CuPy's, native code's) is dispatched at
# once, beside the harness's flush still running on the current stream, and part or all of it runs before the
# start event, where neither the window nor the tail sees it. With one, it is queued behind the start event. On
# the H200 (2026-12-02, benchmarks/side_stream_hiding.py, docs/GPU_RUNS.md): with 8, a 70-130 us side kernel
# began before the start event in 21-30 of 30 calls after the flush alone, and 6 of 30 at high priority ended
# before it; with 1, every one began 1.2-1.3 us after it, and a plain event timing of the same kernel on the
# current stream read 67.5 us against 67.4. KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS changes it (measurements only).
CUDA_CONNECTIONS_VAR = "KERNELHUB_CUDA_DEVICE_MAX_CONNECTIONS"
LOG_TAIL_BYTES = 4000
# Children run as BASE + a random 16-bit number: a uid no account has (above systemd's container range), so
# they own nothing on the host but their own directory, and RLIMIT_NPROC counts one evaluation's tasks.
SANDBOX_UID_BASE = 2_000_000_000
_UNSHARE_ARGS = ["--net", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child"]


@functools.cache
def unshare_works() -> bool:
    exe = shutil.which("unshare")
    if not exe or config.setting("no_namespaces"):
        return False
    try:
        return subprocess.run([exe, *_UNSHARE_ARGS, "true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _python_path() -> str:
    # The directory holding the gpu_runner package, so the child imports this very code.
    return str(Path(__file__).resolve().parent.parent)


def child_env(workdir: Path, marker: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    bin_dirs = [str(Path(sys.executable).parent), "/usr/local/cuda/bin", "/usr/local/bin", "/usr/bin", "/bin"]
    env.update(
        {
            "PATH": ":".join(dict.fromkeys(bin_dirs)),
            "HOME": str(workdir),
            "USER": "kernelhub",
            "LOGNAME": "kernelhub",
            "TMPDIR": str(workdir / "tmp"),
            "TORCH_EXTENSIONS_DIR": str(workdir / "cache-torch-extensions"),
            "TRITON_CACHE_DIR": str(workdir / "cache-triton"),
            "CUPY_CACHE_DIR": str(workdir / "cache-cupy"),
            "TORCHINDUCTOR_CACHE_DIR": str(workdir / "cache-inductor"),
            "XDG_CACHE_HOME": str(workdir / "cache-xdg"),
            "PYTHONPATH": _python_path(),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONUNBUFFERED": "1",
            # OpenMP's idle threads spin for well under a millisecond (GNU's default is some 300,000 pauses,
            # milliseconds) before they sleep: a spinning thread's CPU time is brought up to date only at the
            # scheduler's tick (4 ms on the development machine), and the clock audit reads the threads' CPU
            # time between calls (timing.clock_audit). Every child alike, baselines and solutions.
            "GOMP_SPINCOUNT": "10000",
            "KMP_BLOCKTIME": "0",  # the same for LLVM's and Intel's OpenMP
            "CUDA_DEVICE_MAX_CONNECTIONS": str(config.setting("cuda_device_max_connections")),
            MARKER_VAR: marker,
        }
    )
    env.update(extra or {})
    return env


def _count_processes_of(uid: int) -> int:
    n = 0
    for p in psutil.process_iter(["uids"]):
        try:
            if p.info["uids"] and p.info["uids"].real == uid:
                n += 1
        except psutil.Error:
            pass
    return n


@dataclass
class Limits:
    wall_s: float
    cpu_s: int
    memory_bytes: int | None  # RLIMIT_AS; None on CUDA (the driver maps huge virtual ranges)
    file_bytes: int = 8 << 30
    tasks: int = 1024
    # False: the child gets no GPU (a build slot's, gpu_runner/prebuild.py): CUDA_VISIBLE_DEVICES empty and, in a
    # mount namespace, every /dev/nvidia* node bound to /dev/null, so that resetting the variable opens nothing.
    gpu: bool = True


_PR_SET_PDEATHSIG = 1
_LIBC_FOR_CHILDREN: Any = None
# The host's OOM killer takes a child, not the evaluator that would report why (oom_score_adj, proc(5)).
CHILD_OOM_SCORE_ADJ = 1000


def _preexec(limits: Limits, nproc: int) -> Any:
    global _LIBC_FOR_CHILDREN
    if _LIBC_FOR_CHILDREN is None:
        _LIBC_FOR_CHILDREN = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc, parent = _LIBC_FOR_CHILDREN, os.getpid()

    def apply() -> None:
        # Killed with its parent, kill -9 included (under unshare, --kill-child takes the harness along): a dead
        # evaluator leaves no child computing on. The kernel sends it when the thread that spawned the child
        # ends: the thread that runs an evaluation, or a runner's thread that refills its warm pool, both of
        # which outlive the child.
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)  # the parent died before the line above
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write(str(CHILD_OOM_SCORE_ADJ))
        except OSError:
            pass
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
        # RLIMIT_NPROC counts every task of the real uid; it binds root only once capabilities are dropped.
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if limits.memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    return apply


class BoundedLog:
    """The child's stdout and stderr, drained as they come so it never blocks, keeping the head and the tail
    (a solution may print gigabytes)."""

    HEAD, TAIL = 8 << 10, 64 << 10

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.lock = threading.Lock()

    def drain(self, stream: Any) -> None:
        while True:
            chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
            if not chunk:
                break
            with self.lock:
                room = self.HEAD - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                self.tail += chunk
                if len(self.tail) > self.TAIL:
                    self.dropped += len(self.tail) - self.TAIL
                    del self.tail[: len(self.tail) - self.TAIL]
        stream.close()

    def text(self, limit: int) -> str:
        with self.lock:
            data = bytes(self.head + self.tail)
            skipped = self.dropped
        if len(data) > limit:
            skipped += len(data) - limit
            data = data[-limit:]
        return ("...\n" if skipped else "") + data.decode("utf-8", "replace")


@dataclass
class Child:
    proc: subprocess.Popen
    channel: Channel
    workdir: Path
    marker: str
    isolation: dict[str, Any] = field(default_factory=dict)
    descendants: dict[int, psutil.Process] = field(default_factory=dict)
    log: BoundedLog = field(default_factory=BoundedLog)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, limit: int = LOG_TAIL_BYTES) -> str:
        return self.log.text(limit)

    def exit_description(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        # unshare reports a signal-killed child as 128 + signal number
        if code > 128 and self.isolation.get("namespaces"):
            try:
                return f"killed by signal {signal.Signals(code - 128).name}"
            except ValueError:
                pass
        return f"exited with status {code}"


def hidden_paths() -> list[str]:
    """What a child must not see: other evaluations' directories, the build and baseline caches (other
    submissions' sources and libraries), and the runner's home (its credentials, its other caches)."""
    paths = [work_base(), cache_dir(), Path.home()]
    return list(dict.fromkeys(str(p.resolve()) for p in paths if p.resolve() != Path("/")))


def _give_to(workdir: Path, uid: int) -> None:
    # The child's directory and what is in it so far become the child's; what the parent adds later stays
    # the parent's (root-owned, readable: the problem, the solution, the child's built libraries).
    os.chown(workdir, uid, uid)
    for root, dirs, files in os.walk(workdir):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def new_workdir(prefix: str) -> Path:
    """A fresh directory named after its owner (`<prefix>o<pid>-...`, gpu_runner/cleanup.py): once this process is
    gone, however it died, the next evaluation or runner start removes it."""
    base = work_base()
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{cleanup.owner_tag(base)}-", dir=base))
    path.chmod(0o700)
    for sub in ("tmp", "cache-torch-extensions", "cache-triton", "cache-cupy", "cache-inductor", "cache-xdg"):
        (path / sub).mkdir()
    return path


def spawn(argv: list[str], *, workdir: Path, limits: Limits, extra_env: dict[str, str] | None = None,
          marker: str | None = None) -> Child:
    """Start `python <argv>` sandboxed in workdir, with a channel on fd 3 (passed as the first argument)."""
    marker = marker or secrets.token_hex(16)
    parent_sock, child_sock = socket.socketpair()
    env = child_env(workdir, marker, extra_env)
    if not limits.gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    namespaces = unshare_works()
    cmd = [sys.executable, "-s", *argv, str(child_sock.fileno())]
    identity = f"the runner's uid {os.geteuid()}: " + (
        "switching needs root" if namespaces else "no namespaces, so no lockdown to switch in")
    if namespaces:
        cmd = [shutil.which("unshare") or "unshare", *_UNSHARE_ARGS, "--", *cmd]
        env["KERNELHUB_LOCKDOWN"] = str(workdir)
        env["KERNELHUB_LOCKDOWN_HIDE"] = os.pathsep.join(hidden_paths())
        if not limits.gpu:
            env["KERNELHUB_LOCKDOWN_NO_GPU"] = "1"
        if os.geteuid() == 0:
            uid = SANDBOX_UID_BASE + secrets.randbelow(1 << 16)
            _give_to(workdir, uid)
            env["KERNELHUB_SANDBOX_UID"] = str(uid)
            identity = f"uid and gid {uid} (unprivileged, this evaluation's own), set after the mounts"
    nproc = _count_processes_of(os.getuid()) + limits.tasks
    try:
        proc = subprocess.Popen(
            cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(child_sock.fileno(),), start_new_session=True, preexec_fn=_preexec(limits, nproc),
        )
    finally:
        child_sock.close()
    isolation = {
        "process": "fresh process, own session and process group",
        "namespaces": namespaces,
        "network": "none (new network namespace)" if namespaces else "host network (unshare not permitted)",
        "pid_namespace": namespaces,
        "identity": identity,
        "hidden": "work base, cache directory and the runner's home (empty tmpfs), its own directory bound back"
        if namespaces else "nothing: no mount namespace",
        "env": "allowlist: " + ", ".join(sorted(set(env) - {MARKER_VAR, "KERNELHUB_LOCKDOWN",
                                                            "KERNELHUB_LOCKDOWN_HIDE", "KERNELHUB_SANDBOX_UID"})),
        "rlimits": {
            "cpu_s": limits.cpu_s,
            "address_space_bytes": limits.memory_bytes,
            "file_bytes": limits.file_bytes,
            "tasks": "bounded once capabilities are dropped" if namespaces else (
                "bounded" if os.getuid() != 0 else "not bounded (root keeps CAP_SYS_RESOURCE)"),
        },
        "wall_clock_s": limits.wall_s,
    }
    if not limits.gpu:
        isolation["gpu"] = ("none: CUDA_VISIBLE_DEVICES empty, the GPU device nodes bound to /dev/null"
                            if namespaces else "none asked: CUDA_VISIBLE_DEVICES empty (no mount namespace to hide "
                            "the device nodes in)")
    child = Child(proc=proc, channel=Channel(parent_sock), workdir=workdir, marker=marker, isolation=isolation)
    cleanup.record_child(workdir, pgid=proc.pid, marker=marker)
    threading.Thread(target=child.log.drain, args=(proc.stdout,), daemon=True).start()
    return child


def _remember_descendants(child: Child) -> None:
    try:
        for p in psutil.Process(child.proc.pid).children(recursive=True):
            child.descendants[p.pid] = p
    except psutil.Error:
        pass


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    me = os.getpid()
    for p in psutil.process_iter():
        if p.pid == me:
            continue
        try:
            if p.environ().get(MARKER_VAR) == marker:
                found.append(p)
        except psutil.Error:
            pass
    return found


@contextlib.contextmanager
def stopped(child: Child) -> Iterator[None]:
    """The child stopped (SIGSTOP) while the block runs, then continued: nothing it left running on the CPU (a
    thread, a forked helper) can load the host while the parent measures something else. Its process group, and
    each of its descendants by pid (a process can leave the group with setpgid or setsid). Work it queued on a
    GPU before it was stopped still runs (docs/ANTICHEAT.md, known gaps)."""
    pids = pause(child)
    try:
        yield
    finally:
        resume(child, pids)


def pause(child: Child) -> list[int]:
    """Stop the child (SIGSTOP): its process group and each of its descendants. Returns the descendants' pids, for
    resume(). Work it queued on a GPU before it was stopped still runs: finish that first (child.py's quiesce)."""
    # Its descendants now, and those seen before (one that left the group by setsid is still followed).
    _remember_descendants(child)
    pids = [pid for pid, p in child.descendants.items() if p.is_running()]
    _signal_all(child, pids, signal.SIGSTOP)
    return pids


def all_stopped(child: Child, pids: list[int]) -> bool:
    """Whether every thread of the child's process group's leader and of `pids` is stopped now (a signal is
    delivered a moment after it is sent); a process already gone counts as stopped."""
    for pid in [child.proc.pid, *pids]:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in ("T", "t", "Z", "X"):
                return False
    return True


def resume(child: Child, pids: list[int]) -> None:
    """Continue what pause() stopped."""
    _signal_all(child, pids, signal.SIGCONT)


def _signal_all(child: Child, pids: list[int], sig: int) -> None:
    """sig to the child's process group and to each of pids; processes already gone are skipped."""
    for send, target in [(os.killpg, child.proc.pid)] + [(os.kill, pid) for pid in pids]:
        try:
            send(target, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill(child: Child, *, remove_dir: bool = True) -> list[int]:
    """Kill the child, its process group, every descendant and anything carrying its marker; wait for them.

    Returns the pids found alive after the process group was killed (escapees), for the record.
    """
    _remember_descendants(child)
    _kill_group(child.proc.pid)
    try:
        child.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    # What is still alive now left the process group (setsid, double fork): hunt it down by ancestry and marker.
    escapees: list[int] = []
    for _ in range(50):
        stragglers = {p.pid: p for p in _marked(child.marker)}
        for pid, p in child.descendants.items():
            stragglers.setdefault(pid, p)
        # is_running() also compares creation times, so a recycled pid is never mistaken for ours.
        alive = [p for p in stragglers.values() if p.is_running() and _not_zombie(p)]
        if not alive:
            break
        for p in alive:
            if _in_group(p.pid, child.proc.pid):
                # Killed with its group and still exiting (tearing down gigabytes takes a moment), or forked in
                # the instant of the kill: the group is killed again, and it is not counted as an escapee.
                _kill_group(child.proc.pid)
                continue
            escapees.append(p.pid)
            try:
                print(f"kernelhub: killing escaped process {p.pid} {p.cmdline()[:4]}", file=sys.stderr)
            except psutil.Error:
                pass
            try:
                p.kill()
            except psutil.Error:
                pass
        time.sleep(0.1)
    child.channel.close()
    if remove_dir:
        shutil.rmtree(child.workdir, ignore_errors=True)
        cleanup.forget_child(child.workdir)
    return sorted(set(escapees))


def _in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except OSError:  # gone already
        return False


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _not_zombie(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ----- inside the child: the lockdown the harness applies before any untrusted code runs -----

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME, _MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
_OPTION_FLAGS = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC, "noatime": _MS_NOATIME,
                 "nodiratime": _MS_NODIRATIME, "relatime": _MS_RELATIME}


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount(libc: Any, source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _mount_points() -> list[tuple[str, int]]:
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mount_point = parts[4].replace("\\040", " ")
            flags = 0
            for opt in parts[5].split(","):
                flags |= _OPTION_FLAGS.get(opt, 0)
            points.append((mount_point, flags))
    return points


def _drop_bounding_set(libc: Any) -> None:
    # First, while CAP_SETPCAP is still held: nothing executed later can regain a capability.
    pr_capbset_drop, pr_cap_ambient, pr_cap_ambient_clear_all = 24, 47, 4
    libc.prctl(pr_cap_ambient, pr_cap_ambient_clear_all, 0, 0, 0)
    for cap in range(64):
        libc.prctl(pr_capbset_drop, cap, 0, 0, 0)


def _drop_capabilities(libc: Any) -> None:
    pr_set_no_new_privs = 38
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _needed_paths() -> list[str]:
    """The directories the child needs: its interpreter, its prefixes, sys.path, the CUDA toolkit and the
    libraries it was told to load (a conda install or a toolkit in the runner's home stays reachable)."""
    wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable), *sys.path,
              os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""),
              *os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)}
    return sorted({os.path.realpath(p) for p in wanted if p and os.path.isdir(p)})


def _below(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _paths_to_keep(tmpfs_points: list[str], *, exclude: str) -> list[str]:
    """Needed directories that lie below a future tmpfs, outermost only (bound back on top of it)."""
    found: list[str] = []
    for path in _needed_paths():
        below_tmpfs = any(_below(path, t) for t in tmpfs_points)
        if below_tmpfs and path not in tmpfs_points and not _below(path, exclude) and not any(
                _below(path, f) for f in found):
            found.append(path)
    return found


def _gpu_device_nodes() -> list[str]:
    return sorted(str(p) for p in Path("/dev").glob("nvidia*") if p.is_char_device())


def _hide_gpu(libc: Any) -> str:
    """Bind /dev/null over every GPU device node in this mount namespace: opening one then reaches no driver."""
    nodes = _gpu_device_nodes()
    for node in nodes:
        _mount(libc, "/dev/null", node, None, _MS_BIND, None)
    return f"hidden: {len(nodes)} device nodes bound to /dev/null" if nodes else "no GPU device nodes on this host"


def _switch_identity(uid: int, workdir: str) -> str:
    """Become `uid` for good, unless something the child needs is out of its reach: then stay, and say why.

    The check is the kernel's own (access(2) with the new real ids), made while the saved uid is still 0.
    The GPU's device nodes are usually 0666; where one is group-only, its group is kept as a supplementary one.
    """
    nodes = _gpu_device_nodes()
    groups = sorted({os.stat(n).st_gid for n in nodes if os.stat(n).st_mode & 0o006 != 0o006})
    os.setgroups(groups)
    os.setresgid(uid, uid, 0)
    os.setresuid(uid, uid, 0)
    needs = [(workdir, os.R_OK | os.W_OK | os.X_OK), (os.path.realpath(sys.executable), os.X_OK)]
    needs += [(p, os.R_OK | os.X_OK) for p in _needed_paths()]
    needs += [(n, os.R_OK | os.W_OK) for n in nodes]
    missing = [p for p, mode in needs if not os.access(p, mode)]
    if missing:
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
        os.setgroups([])
        return f"uid 0 kept: {missing[0]} is not accessible to an unprivileged uid (make it world-readable)"
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    # A change of uid makes the process undumpable, which hides its own /proc entries from itself; nothing
    # outside its PID namespace shares the uid, so making it dumpable again opens nothing.
    _libc().prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    return f"uid and gid {uid}" + (f", supplementary groups {groups} (GPU device nodes)" if groups else "")


def lockdown(workdir: str) -> dict[str, Any]:
    """Called first thing in a child started in fresh namespaces. Returns what it achieved.

    Every filesystem read-only except `workdir` and fresh tmpfs mounts on /tmp, /var/tmp, /dev/shm; the
    directories named in KERNELHUB_LOCKDOWN_HIDE (work base, cache, the runner's home) covered by empty
    read-only tmpfs, with the interpreter, sys.path and `workdir` bound back; then the unprivileged uid in
    KERNELHUB_SANDBOX_UID, and all capabilities dropped, so the child cannot undo any of it, and
    RLIMIT_NPROC binds it.
    """
    result: dict[str, Any] = {"fs": "not locked down", "capabilities": "kept", "identity": "unchanged"}
    libc = _libc()
    os.umask(0o022)  # directories made below are the mount points the unprivileged child walks through
    try:
        _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE, None)
        # Held open so the directory can be bound back should a fresh tmpfs below cover it.
        handle = os.open(workdir, os.O_PATH | os.O_DIRECTORY)
        own = {workdir}
        tmpfs_points = [tmp for tmp in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(tmp)]
        needed = _needed_paths()
        hide = [os.path.realpath(p) for p in os.environ.get("KERNELHUB_LOCKDOWN_HIDE", "").split(os.pathsep) if p]
        # A hidden directory that is itself needed (a home that is the checkout) cannot be hidden.
        hide = [p for p in dict.fromkeys(hide) if os.path.isdir(p) and p != "/" and p not in needed]
        # The interpreter, its libraries and this package may live below one of them (a checkout in /tmp, a
        # Python in the runner's home): bound back, and made read-only with everything else below. One below
        # a future tmpfs is covered by that tmpfs.
        outer = [p for p in hide if not any(_below(p, n) for n in needed)
                 and not any(_below(p, t) for t in tmpfs_points)]
        # Hidden inside a kept tree (a cache or work base in a checkout, also a checkout below /tmp that is
        # bound back on top of the fresh /tmp): covered once that tree is bound back, unless it holds
        # something needed in turn. Where nothing was bound back over it, it is gone already (isdir below).
        inner = [p for p in hide if p not in outer and not any(_below(n, p) for n in needed)]
        keep = {}
        for path in _paths_to_keep(tmpfs_points + outer, exclude=workdir):
            keep[path] = os.open(path, os.O_PATH | os.O_DIRECTORY)
        for tmp in tmpfs_points:
            _mount(libc, "tmpfs", tmp, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=2g,mode=1777")
            own.add(tmp)
        for path in sorted(outer, key=len):
            if os.path.isdir(path):  # not already covered by an outer one
                _mount(libc, "tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
        for path, fd in keep.items():
            os.makedirs(path, exist_ok=True)
            _mount(libc, f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, None)
            os.close(fd)
        for path in sorted(inner, key=len):
            if os.path.isdir(path):
                _mount(libc, "tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
        if os.environ.get("KERNELHUB_LOCKDOWN_NO_GPU"):
            result["gpu"] = _hide_gpu(libc)
        # Last, so it lies on top of a kept directory that holds it (a checkout's var/ below /tmp).
        os.makedirs(workdir, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{handle}", workdir, None, _MS_BIND | _MS_REC, None)
        os.close(handle)
        os.chdir(workdir)
        failed = []
        for point, flags in _mount_points():
            if point in own or point == "/proc" or point.startswith("/proc/"):
                continue
            try:
                _mount(libc, None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, None)
            except OSError:
                failed.append(point)
        probe = Path("/kernelhub-write-probe")
        try:
            probe.write_text("x")
            probe.unlink()
            writable_root = True
        except OSError:
            writable_root = False
        result["fs"] = (
            "read-only except its own directory and private tmpfs on /tmp, /var/tmp, /dev/shm"
            if not writable_root else "remount failed: / stayed writable"
        )
        result["hidden"] = hide
        if failed:
            result["fs_not_readonly"] = failed[:20]
    except OSError as e:
        result["fs"] = f"not locked down ({e})"
    try:
        _drop_bounding_set(libc)
        if os.environ.get("KERNELHUB_SANDBOX_UID"):
            result["identity"] = _switch_identity(int(os.environ["KERNELHUB_SANDBOX_UID"]), workdir)
        _drop_capabilities(libc)
        result["capabilities"] = "all dropped, no_new_privs"
    except OSError as e:
        result["capabilities"] = f"kept ({e})"
    return result


def _harness_pid(child: Child) -> int:
    """The Python process of the child (under `unshare` it is unshare's only child)."""
    if not child.isolation.get("namespaces"):
        return child.proc.pid
    try:
        kids = psutil.Process(child.proc.pid).children()
        return kids[0].pid if kids else child.proc.pid
    except psutil.Error:
        return child.proc.pid


def thread_cpu_ns(child: Child) -> dict[int, Any]:
    """CPU time of each thread of the child's Python process, in ns, from the kernel's scheduler statistics
    (/proc/PID/task/TID/schedstat): what the child ran, not what it says. Under RUN_DELAYS, each thread's time
    spent runnable but waiting for a CPU (the same file's second field): on a loaded host a thread's work takes
    its CPU time plus that wait. Empty where the kernel does not keep these statistics."""
    pid = getattr(child, "harness_pid", None)
    if pid is None:
        pid = child.harness_pid = _harness_pid(child)  # type: ignore[attr-defined]
    out: dict[int, Any] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        # The whole process's CPU time in clock ticks (utime + stime), threads that have exited included, and
        # its page faults (minor + major).
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out[PROCESS_TICKS] = int(fields[11]) + int(fields[12])
        out[PROCESS_FAULTS] = int(fields[7]) + int(fields[9])
    except (OSError, ValueError, IndexError):
        return {}
    delays: dict[int, int] = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ran, waited = f.read().split()[:2]
            out[int(tid)], delays[int(tid)] = int(ran), int(waited)
        except (OSError, ValueError, IndexError):
            continue
    out[RUN_DELAYS] = delays
    return out


PROCESS_TICKS = -1  # thread_cpu_ns's key for the whole process's CPU time, in clock ticks
PROCESS_FAULTS = -2  # and for its page faults
RUN_DELAYS = -3  # and for each thread's time waiting on a run queue, in ns ({tid: ns})
_TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")


def busiest_thread_us(before: dict[int, Any], after: dict[int, Any]) -> float | None:
    """The longest one thread ran or waited to run between two thread_cpu_ns readings, in us (its CPU time plus
    its time runnable on a run queue): a lower bound of the wall time between them (a thread cannot run and wait
    longer than the time that passed), and unlike CPU time alone it is that work's wall time when a loaded host
    keeps the thread waiting for a CPU. Readings without run delays count CPU time alone. None when the readings
    cannot say: the threads changed between them, or the process ran more CPU time (threads that came and went
    inside) than its threads still there account for, beyond two clock ticks."""
    if not before or not after or set(before) != set(after):
        return None
    tids = [t for t in after if t >= 0]
    deltas = [after[t] - before[t] for t in tids]
    process_ns = (after.get(PROCESS_TICKS, 0) - before.get(PROCESS_TICKS, 0)) * _TICK_NS
    if process_ns > sum(deltas) + 2 * _TICK_NS:
        return None
    waits0, waits1 = before.get(RUN_DELAYS, {}), after.get(RUN_DELAYS, {})
    spans = [d + max(0, waits1.get(t, 0) - waits0.get(t, 0)) if t in waits0 and t in waits1 else d
             for t, d in zip(tids, deltas, strict=True)]
    return max(spans, default=0) / 1000.0


def faults_between(before: dict[int, Any], after: dict[int, Any]) -> int | None:
    """The process's page faults between two thread_cpu_ns readings (None where either lacks them)."""
    if PROCESS_FAULTS not in before or PROCESS_FAULTS not in after:
        return None
    return after[PROCESS_FAULTS] - before[PROCESS_FAULTS]


def observed_isolation(child: Child) -> dict[str, Any]:
    """What the parent can see for itself in /proc about the child: nothing here is the child's own claim."""
    pid = _harness_pid(child)
    seen: dict[str, Any] = {}
    for ns in ("net", "mnt", "pid"):
        try:
            seen[f"own_{ns}_namespace"] = os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            seen[f"own_{ns}_namespace"] = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    seen["capabilities_dropped"] = int(line.split()[1], 16) == 0
                elif line.startswith("NoNewPrivs:"):
                    seen["no_new_privs"] = line.split()[1] == "1"
                elif line.startswith("Uid:"):
                    # real, effective, saved, filesystem: an unprivileged child has the same one four times
                    seen["uids"] = [int(u) for u in line.split()[1:5]]
                    seen["uid"] = seen["uids"][0]
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max address space"):
                    soft = line[len("Max address space"):].split()[0]
                    seen["address_space_bytes"] = None if soft == "unlimited" else int(soft)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/mountinfo") as f:
            mounts = [line.split() for line in f]
        root = [m for m in mounts if m[4] == "/"]
        seen["root_read_only"] = bool(root) and "ro" in root[-1][5].split(",")
        writable = [m[4] for m in mounts if "rw" in m[5].split(",") and not m[4].startswith(("/proc", "/sys", "/dev"))
                    and m[4] not in ("/tmp", "/var/tmp")]
        seen["writable_mounts"] = writable[:10]
    except OSError:
        pass
    return seen
