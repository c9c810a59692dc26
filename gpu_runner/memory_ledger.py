"""What the evaluations running on this host have planned to hold: the memory plan's count of the others (issue 13,
"what runs at once").

Several evaluations share a host and its GPUs: `serve` takes KERNELHUB_GPU_JOBS jobs per GPU, so that one
evaluation loads and checks while another times (gpulock.py keeps the timed part alone on its device), and a
batch of command-line evaluations may run side by side. Each evaluation's plan (memory_plan.py) counts the memory
free when it starts; another one that started a moment earlier may not have allocated yet what it planned, and
two plans that each fit alone could together run the host into its OOM killer or the GPU out of memory.

So each evaluation writes its plan's needs (host bytes, and device bytes on its GPU) into a host-wide ledger: one
JSON file per evaluation under KERNELHUB_CACHE_DIR/memory/, each held under an flock by its evaluation for as
long as it runs, all read and written under the ledger's own flock. An evaluation plans from the free memory less
what the others reserved. One that fits alone but not beside them waits for them (the wait is recorded in its
result and counts against no deadline but KERNELHUB_GPU_LOCK_TIMEOUT_S); one that cannot fit alone is refused at
once, as before. The count is conservative: what the others reserved is subtracted from free memory that already
lacks what they have allocated so far, so a second large evaluation waits rather than risk running out.

The kernel drops an entry's flock when its evaluation dies, however it dies: an entry whose lock can be taken
belongs to nobody, counts for nothing, and is removed (with a log line) by the next evaluation that reads the
ledger, and by `sweep()` at a runner's start.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_runner import cleanup, config

POLL_S = 0.5

_own: dict[str, int] = {}  # entry path -> fd holding its flock, for this process's evaluations
_own_lock = threading.Lock()


def _forget_after_fork() -> None:
    # A forked child does not run its parent's evaluations: its copies of their locks must not keep them alive.
    for fd in _own.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _own.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def ledger_dir(settings: config.RunnerConfig | None = None) -> Path:
    folder = cleanup.cache_dir(settings) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def _ledger_locked(folder: Path) -> Iterator[None]:
    with open(folder / "ledger.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _alive(path: Path) -> bool:
    """Whether the entry's evaluation still holds it (its flock cannot be taken)."""
    return str(path) in _own or cleanup.flock_held(path)


def _log(msg: str) -> None:
    print(f"kernelhub: {msg}", file=sys.stderr, flush=True)


@dataclass
class Held:
    """What the other live evaluations of the host reserved."""
    host_bytes: int = 0
    device_bytes: dict[str, int] = field(default_factory=dict)  # per device key (gpulock.device_key)
    holders: list[dict[str, Any]] = field(default_factory=list)
    # Set by given_back(whole_device=True): a plan counts the whole GPU as free, as it is once every process on it
    # ends (reference._free_beside). In a replan (Reservation.replan): "would the plan fit once the others it may
    # wait for end", judged against the whole GPU less what those it may not wait for hold (held_now).
    whole_device: bool = False
    # Set by grown_since: what the others of the reading hold now, per device key, all of it and not only what
    # they added since the reservation (a replan that reads the GPU's free memory afresh counts them this way).
    held_now: dict[str, int] = field(default_factory=dict)

    def on(self, device_key: str) -> int:
        return self.device_bytes.get(device_key, 0)

    def given_back(self, *, whole_device: bool = False) -> Held:
        """The same amounts negated: a plan made from the free memory less these (attempt) counts what the others
        reserved as free again, as it will be once they end. The free memory a plan reads already lacks what they
        have allocated, so "would it fit alone" must add it back, not merely stop subtracting it. whole_device:
        where other evaluations share this GPU, what they hold may exceed what they reserved (their processes'
        CUDA contexts and caching allocators, an evaluator's own cache, a plan short of the real need): "would it
        fit alone" is then judged against the whole GPU, and a plan that fits waits for them to end."""
        return Held(host_bytes=-self.host_bytes, device_bytes={k: -v for k, v in self.device_bytes.items()},
                    whole_device=whole_device)

    def describe(self, device_key: str) -> str:
        mine = [h for h in self.holders if h.get("host_bytes") or h.get("device") == device_key]
        return "; ".join(f"pid {h.get('pid')} ({h.get('label') or 'an evaluation'}, host "
                         f"{h.get('host_bytes', 0) / (1 << 30):.1f} GiB, device "
                         f"{h.get('device_bytes', 0) / (1 << 30):.1f} GiB, since "
                         f"{time.strftime('%H:%M:%S', time.localtime(h.get('since', 0)))})" for h in mine) or "none"


def _read(folder: Path, *, exclude: str | None = None) -> tuple[Held, list[dict[str, Any]]]:
    """The live entries (except `exclude`), and the stale ones removed on the way. Under the ledger's lock. An
    entry waiting to grow (Reservation.replan) counts as what it wants where that is more than it holds."""
    held = Held()
    removed: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json")):
        if str(path) == exclude:
            continue
        try:
            info = json.loads(path.read_text() or "{}")
        except (OSError, ValueError):
            info = {}
        if not _alive(path):
            path.unlink(missing_ok=True)
            removed.append({"entry": path.name, **{k: info.get(k) for k in ("pid", "label", "host_bytes",
                                                                          "device", "device_bytes")}})
            continue
        info["entry"] = path.name  # which evaluation, for Reservation.replan's count of what changed since
        for kind in ("host", "device"):
            info[f"{kind}_bytes"] = max(int(info.get(f"{kind}_bytes") or 0), int(info.get(f"wants_{kind}_bytes") or 0))
        held.host_bytes += info["host_bytes"]
        if info.get("device"):
            key = str(info["device"])
            held.device_bytes[key] = held.device_bytes.get(key, 0) + info["device_bytes"]
        held.holders.append(info)
    if removed:
        _log(f"memory ledger: removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} of evaluations "
             f"that are gone: {', '.join(str(r['entry']) for r in removed)}")
    return held, removed


def _next_seq(folder: Path) -> int:
    """The order in which entries were made (a counter kept under the ledger's lock: a wall clock can step back
    and two readings can tie)."""
    path = folder / ".seq"
    try:
        n = int(path.read_text() or "0") + 1
    except (OSError, ValueError):
        n = 1
    path.write_text(str(n))
    return n


def sweep(settings: config.RunnerConfig | None = None) -> list[dict[str, Any]]:
    """Remove the entries of evaluations that are gone; returns them (a runner's start-up cleanup)."""
    folder = ledger_dir(settings)
    with _ledger_locked(folder):
        return _read(folder)[1]


def held_by_others(settings: config.RunnerConfig | None = None) -> Held:
    folder = ledger_dir(settings)
    with _ledger_locked(folder):
        return _read(folder)[0]


class MemoryWaitTimeout(RuntimeError):
    """The evaluation fits alone but the others' reservations did not go in time; the message names them."""


class MemoryWaitCancelled(MemoryWaitTimeout):
    """The evaluation ended (its cleanup set `cancel`) while it waited for memory: nothing was reserved."""


def _cancelled(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise MemoryWaitCancelled("the evaluation ended while it waited for memory")


@dataclass
class Reservation:
    path: Path
    device_key: str
    host_bytes: int
    device_bytes: int
    waited_s: float
    others: Held
    label: str = ""
    since: float = 0.0
    waited_for: list[dict[str, Any]] = field(default_factory=list)  # the others it found in its way, if it waited
    seq: int = 0  # the order of entries (_next_seq)
    replanned: dict[str, Any] = field(default_factory=dict)  # replan's record: what the others grew, its wait

    def _set(self, host_bytes: int, device_bytes: int, wants: tuple[int, int] | None = None) -> None:
        """The entry says what the plan holds; `wants`: what a replan waits for (others count the larger)."""
        self.host_bytes, self.device_bytes = host_bytes, device_bytes
        fd = _own.get(str(self.path))
        if fd is not None:
            info = self._info()
            if wants is not None:
                info.update(replanning=True, wants_host_bytes=wants[0], wants_device_bytes=wants[1])
            _write(fd, info)

    def grown_since(self, now: Held) -> Held:
        """What the others reserved beyond what this reservation saw when it was made: the entries that came
        since, and what earlier ones added since (an entry's plan may grow too). Memory given back is not
        counted (it may be in use by now)."""
        before = {h.get("entry"): h for h in self.others.holders}
        grown = Held(whole_device=now.whole_device)
        for h in now.holders:
            if h.get("device"):
                key = str(h["device"])
                grown.held_now[key] = grown.held_now.get(key, 0) + int(h.get("device_bytes") or 0)
            was = before.get(h.get("entry"), {})
            host = max(0, int(h.get("host_bytes") or 0) - int(was.get("host_bytes") or 0))
            device = max(0, int(h.get("device_bytes") or 0) - int(was.get("device_bytes") or 0))
            if host or device:
                grown.host_bytes += host
                if h.get("device"):
                    key = str(h["device"])
                    grown.device_bytes[key] = grown.device_bytes.get(key, 0) + device
                grown.holders.append(h)
        return grown

    def _waitable(self, h: dict[str, Any]) -> bool:
        """May a replan wait for this entry to end? Not for one made earlier that is itself waiting in a replan:
        that one may be waiting for this one, and two that waited for each other would both wait out their
        time. Between replans only the earlier waits for the later, so no wait goes round in a circle."""
        return not h.get("replanning") or int(h.get("seq") or 0) > self.seq

    def replan(self, attempt: Callable[[Held], tuple[bool, int, int]], *, timeout_s: float,
               cancel: threading.Event | None = None) -> bool:
        """The plan changed (the timing plan, from the measured footprint, can need more than the first plan
        reserved). attempt(grown) -> (fits, host_bytes, device_bytes): the plan made from the memory free at
        the reservation less `grown`, what the others reserved beyond what was counted then (grown_since), or
        from the memory free now beside all they hold (grown.held_now). Where it fits, the entry holds its needs at
        once (under the ledger's lock: nobody plans in between). Where it fits only once the others it may wait
        for have ended (_waitable; attempt's Held then has whole_device set and holds only the others it may not
        wait for), it waits for them to end, up to timeout_s, its entry saying
        meanwhile what it wants, so that evaluations that start meanwhile count it and cannot starve it. Returns
        False where it cannot fit (attempt's last call is then the plan beside all of them, for the caller's
        refusal); raises MemoryWaitTimeout after timeout_s seconds, MemoryWaitCancelled once `cancel` is set."""
        folder = self.path.parent
        started = time.monotonic()
        in_the_way: list[dict[str, Any]] = []
        waiting = False
        try:
            while True:
                _cancelled(cancel)
                with _ledger_locked(folder):
                    now, _ = _read(folder, exclude=str(self.path))
                    grown = self.grown_since(now)
                    fits, host_b, device_b = attempt(grown)
                    self.replanned = {"grown_host_bytes": grown.host_bytes,
                                      "grown_device_bytes": grown.on(self.device_key),
                                      "waited_s": round(time.monotonic() - started, 2),
                                      "waited_for": [{k: h.get(k) for k in ("pid", "label", "host_bytes",
                                                                            "device_bytes")} for h in in_the_way]}
                    if fits:
                        self._set(host_b, device_b)
                        waiting = False
                        return True
                    # Those it may wait for: every other evaluation that may end before it (_waitable), not only
                    # those that grew since; it waits where the plan fits once they have ended.
                    in_the_way = [h for h in now.holders if self._waitable(h) and (
                        h.get("device") == self.device_key or int(h.get("host_bytes") or 0) > 0)]
                    if not in_the_way or not attempt(self.grown_since(
                            Held(holders=[h for h in now.holders if not self._waitable(h)], whole_device=True)))[0]:
                        attempt(grown)  # the plan beside all of them, for the refusal's figures
                        return False
                    if not waiting:
                        _log(f"memory: the timing plan needs more than reserved; waiting for "
                             f"{Held(holders=in_the_way).describe(self.device_key)} to end")
                    self._set(self.host_bytes, self.device_bytes, wants=(host_b, device_b))
                    waiting = True
                if time.monotonic() - started > timeout_s:
                    raise MemoryWaitTimeout(
                        f"waited {timeout_s:.0f} s for memory that other evaluations on this host reserved "
                        f"({Held(holders=in_the_way).describe(self.device_key)}); this evaluation's timing plan "
                        "fits without them. Wait for them to end, or stop one that is stuck; "
                        "KERNELHUB_GPU_LOCK_TIMEOUT_S sets how long to wait")
                time.sleep(POLL_S)
        finally:
            if waiting:  # no longer waiting: the entry says what it holds, no more
                with _ledger_locked(folder):
                    self._set(self.host_bytes, self.device_bytes)

    def _info(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "label": self.label, "since": self.since, "seq": self.seq,
                "host_bytes": self.host_bytes, "device": self.device_key, "device_bytes": self.device_bytes}

    def release(self) -> None:
        with _own_lock:
            fd = _own.pop(str(self.path), None)
        if fd is None:
            return
        try:
            with _ledger_locked(self.path.parent):
                self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)  # the flock goes with it: the entry counts no more, removed or not

    def record(self) -> dict[str, Any]:
        return {"host_bytes": self.host_bytes, "device_bytes": self.device_bytes, "waited_s": round(self.waited_s, 2),
                "others_host_bytes": self.others.host_bytes, "others_device_bytes": self.others.on(self.device_key),
                "others": len(self.others.holders),
                "waited_for": [{k: h.get(k) for k in ("pid", "label", "host_bytes", "device_bytes")}
                               for h in self.waited_for],
                **({"replanned": self.replanned} if self.replanned else {})}


def _write(fd: int, info: dict[str, Any]) -> None:
    data = json.dumps(info).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def reserve(device_key: str, attempt: Callable[[Held], tuple[bool, int, int]], *, timeout_s: float,
            label: str = "", settings: config.RunnerConfig | None = None,
            cancel: threading.Event | None = None) -> Reservation | None:
    """Reserve what `attempt` plans beside the others. attempt(others) -> (fits, host_bytes, device_bytes): the
    plan made from the free memory less `others`; called under the ledger's lock, again after each wait. None
    where it does not fit and no other evaluation holds anything (nothing to wait for: the memory went to something
    else since the caller's plan alone). Raises MemoryWaitTimeout after `timeout_s` seconds, MemoryWaitCancelled
    once `cancel` is set (nothing reserved)."""
    folder = ledger_dir(settings)
    started = time.monotonic()
    in_the_way: list[dict[str, Any]] = []
    while True:
        _cancelled(cancel)
        with _ledger_locked(folder):
            others, _ = _read(folder)
            fits, host_b, device_b = attempt(others)
            if fits:
                path = folder / f"{os.getpid()}-{time.time_ns()}.json"
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
                r = Reservation(path, device_key, host_b, device_b, time.monotonic() - started, others, label,
                                since=time.time(), waited_for=in_the_way, seq=_next_seq(folder))
                _write(fd, r._info())
                with _own_lock:
                    _own[str(path)] = fd
                return r
            # Nothing to wait for: nobody holds anything, or it would not fit even once they end, with what they
            # reserved free again (the memory went elsewhere, or the others are on another GPU), or, where some of
            # them share this GPU, with the whole GPU free. The last plan is then the one without them, for the
            # refusal's figures.
            shared = any(h.get("device") == device_key for h in others.holders)
            if not others.holders or not attempt(others.given_back(whole_device=shared))[0]:
                return None
        if not in_the_way:
            in_the_way = list(others.holders)
            _log(f"memory: waiting for other evaluations on this host to end ({others.describe(device_key)})")
        if time.monotonic() - started > timeout_s:
            raise MemoryWaitTimeout(
                f"waited {timeout_s:.0f} s for memory that other evaluations on this host have reserved "
                f"({others.describe(device_key)}); this evaluation fits alone. Wait for them to end, or stop one "
                "that is stuck; KERNELHUB_GPU_LOCK_TIMEOUT_S sets how long to wait")
        time.sleep(POLL_S)
