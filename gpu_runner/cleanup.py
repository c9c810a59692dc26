"""What a killed evaluator leaves behind, found and removed by the next one (issue 13).

Every process that makes children's work directories (an evaluator, a runner's worker) holds an flock on
`<work base>/.owners/<pid>.lock` for its whole life, and names each directory it makes `<role>-o<pid>-<random>`.
The kernel drops the lock when the process dies, however it dies (kill -9 included): a directory whose owner's
lock can be taken belongs to nobody, and a live evaluation's directory is never touched, however many
evaluations share the host. Beside each directory whose child was started, `.owners/<dir>.json` records the
child's process group and marker (sandbox.MARKER_VAR), so that processes of a dead evaluation still running
(a child outside a PID namespace that left its group, say) are found by their marker and killed first.

Directories of the layout before this one (no owner in the name) are removed once untouched for an hour.
`sweep()` runs at each evaluation's start, at a runner's start and when a warm pool is made; it logs and
returns what it removed.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gpu_runner import config

# Every sandboxed child carries this variable, with its evaluation's marker (gpu_runner/sandbox.py sets it); the
# sandbox also puts its children's directories under work_base(). Both live here, where a dead evaluation's
# leftovers are found by them.
MARKER_VAR = "KERNELHUB_EVAL_MARKER"


def cache_dir(settings: config.RunnerConfig | None = None) -> Path:
    """The host's cache (KERNELHUB_CACHE_DIR): settings' where an evaluation passes them, else the environment's."""
    path = settings.cache_dir if settings is not None else config.setting("cache_dir")
    return path or Path.home() / ".cache" / "kernelhub"


def _work_dir(settings: config.RunnerConfig | None) -> Path | None:
    return settings.work_dir if settings is not None else config.setting("work_dir")


def work_base(settings: config.RunnerConfig | None = None) -> Path:
    """Where the children's directories go (KERNELHUB_WORK_DIR): memory-backed /dev/shm when it is large
    (outputs of gigabytes cross through files there), else the cache directory's work/."""
    chosen = _work_dir(settings)
    if chosen is not None:
        base = chosen
    else:
        base = cache_dir(settings) / "work"
        try:
            if shutil.disk_usage("/dev/shm").free >= 32 << 30 and os.access("/dev/shm", os.W_OK):
                base = Path("/dev/shm") / "kernelhub-work"
        except OSError:
            pass
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o711)
    return base


OWNERS = ".owners"
_OWNED = re.compile(r"-o(\d+)-")
LEGACY_GRACE_S = 3600.0

_held: dict[str, tuple[int, int]] = {}  # work base -> (pid that holds it, fd of its owner lock)
_held_lock = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child (a Celery pool process) shares its parent's lock: it takes its own under its own pid.
    for _pid, fd in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


@atexit.register
def _drop_own_locks() -> None:
    """At a normal exit this process's owner locks go too (its directories are gone by then); after a kill the
    next sweep removes them."""
    for base, (pid, fd) in list(_held.items()):
        if pid == os.getpid():
            (Path(base) / OWNERS / f"{pid}.lock").unlink(missing_ok=True)
            os.close(fd)
    _held.clear()


def _log(msg: str) -> None:
    print(f"kernelhub: {msg}", file=sys.stderr, flush=True)


def owner_tag(base: Path) -> str:
    """`o<pid>`, with this process's owner lock in `base` held (taken on first use, kept until the process ends)."""
    key = str(base)
    pid = os.getpid()
    with _held_lock:
        held = _held.get(key)
        if held is None or held[0] != pid:
            owners = base / OWNERS
            owners.mkdir(mode=0o700, exist_ok=True)
            path = owners / f"{pid}.lock"
            while True:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
                # A sweeper may have unlinked the file of a dead process of the same pid meanwhile: the lock
                # must be on the file the path names.
                try:
                    same = os.fstat(fd).st_ino == os.stat(path).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": pid, "since": time.time()}).encode())
            _held[key] = (pid, fd)
    return f"o{pid}"


def record_child(workdir: Path, *, pgid: int, marker: str) -> None:
    """Beside the directory: the child's process group and marker, for a sweep after this process died."""
    try:
        (workdir.parent / OWNERS / f"{workdir.name}.json").write_text(
            json.dumps({"owner": os.getpid(), "pgid": pgid, "marker": marker}))
    except OSError:
        pass


def forget_child(workdir: Path) -> None:
    (workdir.parent / OWNERS / f"{workdir.name}.json").unlink(missing_ok=True)


def flock_held(path: Path) -> bool:
    """Whether a live process holds an flock on `path` (the kernel drops it when its holder dies); False where
    the file is gone."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


def _owner_alive(base: Path, pid: int) -> bool:
    # The lock is taken before any directory is made: without it, its owner is gone.
    return pid == os.getpid() or flock_held(base / OWNERS / f"{pid}.lock")


def _bases(settings: config.RunnerConfig | None) -> list[Path]:
    found = [work_base(settings)]
    if _work_dir(settings) is None:
        found += [Path("/dev/shm") / "kernelhub-work", cache_dir(settings) / "work"]
    return [b for b in dict.fromkeys(found) if b.is_dir()]


def _kill_marked(markers: set[str]) -> list[int]:
    """Kill every process carrying one of the markers (a dead evaluation's children); returns their pids."""
    import psutil

    if not markers:
        return []
    killed = []
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        try:
            if p.environ().get(MARKER_VAR) in markers:
                p.kill()
                killed.append(p.pid)
        except psutil.Error:
            pass
    return killed


def _kill_groups(pgids: set[int], markers: set[str]) -> list[int]:
    """A recorded process group is killed only while a process in it still carries the recorded marker (a pid
    number is reused; the marker is not)."""
    import psutil

    killed = []
    for pgid in pgids:
        try:
            members = [p for p in psutil.process_iter() if os.getpgid(p.pid) == pgid]
        except (ProcessLookupError, psutil.Error):
            continue
        if any(_marker_of(p, MARKER_VAR) in markers for p in members):
            try:
                os.killpg(pgid, signal.SIGKILL)
                killed += [p.pid for p in members]
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def _marker_of(p: Any, var: str) -> str | None:
    try:
        return p.environ().get(var)
    except Exception:  # noqa: BLE001 - gone, or not readable
        return None


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def sweep(*, why: str = "", settings: config.RunnerConfig | None = None) -> dict[str, Any]:
    """Remove what dead evaluators left in the work bases: directories, their records, their processes.

    Returns {"removed": [{"path", "bytes", "owner"}], "killed": [pids], "records": n}; empty lists when there was
    nothing to remove (the usual case: one directory listing per base)."""
    removed: list[dict[str, Any]] = []
    killed: list[int] = []
    records = 0
    now = time.time()
    for base in _bases(settings):
        stale: list[tuple[Path, int | None]] = []
        try:
            entries = list(base.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
                continue
            m = _OWNED.search(entry.name)
            if m:
                if _owner_alive(base, int(m.group(1))):
                    continue
                stale.append((entry, int(m.group(1))))
            else:
                try:
                    age = now - entry.stat().st_mtime
                except OSError:
                    continue
                if age > LEGACY_GRACE_S:
                    stale.append((entry, None))
        markers: set[str] = set()
        pgids: set[int] = set()
        owners = base / OWNERS
        record_files = list(owners.glob("*.json")) if owners.is_dir() else []
        dead_records = []
        for record in record_files:
            try:
                info = json.loads(record.read_text())
                owner = int(info["owner"])
            except (OSError, ValueError, KeyError, TypeError):
                dead_records.append(record)
                continue
            if _owner_alive(base, owner):
                continue
            dead_records.append(record)
            if isinstance(info.get("marker"), str):
                markers.add(info["marker"])
            if isinstance(info.get("pgid"), int) and info["pgid"] > 1:
                pgids.add(info["pgid"])
        if markers:
            killed += _kill_groups(pgids, markers)
            killed += _kill_marked(markers)
            if killed:
                time.sleep(0.2)  # let the kernel reap them before their directories go
        for path, dead_owner in stale:
            size = _size(path)
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append({"path": str(path), "bytes": size, "owner": dead_owner})
        for record in dead_records:
            record.unlink(missing_ok=True)
            records += 1
        if owners.is_dir():
            for lock in owners.glob("*.lock"):
                try:
                    pid = int(lock.stem)
                except ValueError:
                    continue
                if not _owner_alive(base, pid):
                    lock.unlink(missing_ok=True)
    if removed or killed:
        total = sum(r["bytes"] for r in removed)
        _log(f"cleanup{f' ({why})' if why else ''}: removed {len(removed)} stale work director"
             f"{'y' if len(removed) == 1 else 'ies'} of dead evaluations ({total / 2**20:.1f} MiB): "
             + ", ".join(r["path"] for r in removed[:10]) + (f"; killed their processes {killed}" if killed else ""))
    return {"removed": removed, "killed": sorted(set(killed)), "records": records}
