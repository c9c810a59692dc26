"""Pre-started evaluation processes for a runner that evaluates one submission after another (issue 2).

A cold evaluation starts two processes that import torch before any work begins. A `WarmPool` starts them
before the job arrives: each is spawned exactly as a cold one (sandbox.spawn), so it locks itself down and
imports torch, then waits on its channel for the `load` that names its problem and solution. Neither file
exists in its directory until then, and CUDA is initialised by the child itself inside `load`, after the job
is handed over (never inherited across a fork).

A child serves one submission and is killed with it (evaluate.py closes it); `take` hands each pre-started
process out once and forgets it, and `refill`, called between jobs, starts the next. The pool also keeps the
reference's trial outputs per (problem, seed, device) in this trusted process's memory (`references`, each
a reference.ReferenceData).

    pool = WarmPool("cuda"); pool.refill()
    result = evaluate(problem, solution, device="cuda", pool=pool); pool.refill()
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from gpu_runner.heap import keep_freed_memory

# The roles started ahead: the solution's child and the trusted reference (eager). torch.compile's child is
# needed only when its baseline is not cached, and starts cold then.
ROLES = ("solution", "eager")
REFERENCE_CACHE_BYTES = {"cuda": 4 << 30, "cpu": 1 << 30}


class ReferenceCache:
    """Least recently used entries under a byte budget; an entry over the whole budget is not kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self.lock:
            if key not in self.entries:
                return None
            self.entries.move_to_end(key)
            return self.entries[key][0]

    def put(self, key: Any, value: Any, nbytes: int) -> None:
        if nbytes > self.max_bytes:
            return
        with self.lock:
            self.entries[key] = (value, nbytes)
            self.entries.move_to_end(key)
            while sum(size for _, size in self.entries.values()) > self.max_bytes:
                self.entries.popitem(last=False)


class WarmPool:
    def __init__(self, device: str) -> None:
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
        self.device = device
        # A runner's worker makes its pool when it starts: what dead evaluations left goes first (cleanup.py).
        from gpu_runner import cleanup

        cleanup.sweep(why="warm pool start")
        self.spares: dict[str, Any] = {}
        self.references = ReferenceCache(REFERENCE_CACHE_BYTES[device])
        # (role, pid) of every process handed out, in order: one entry per job, never the same pid twice.
        self.handed_out: list[tuple[str, int]] = []
        self.settled: set[int] = set()  # pids of spares that answered a ping: started (settle)
        self.lock = threading.Lock()
        self.settle_lock = threading.Lock()
        # The parent's comparisons make a dozen output-sized temporaries (float64): kept, they are not
        # page-faulted in full every time (one comparison of a 16 MiB output took half as long).
        self.keeps_freed_memory = keep_freed_memory(1 << 30) > 0

    def refill(self) -> None:
        """Start a child for every role without a live one. Spawning returns at once: the child imports torch
        in the background. Call it between jobs, so the imports do not disturb an evaluation's timing."""
        # Imported here: `enabled` is read in processes without torch (serve).
        from gpu_runner.session import Session, limits

        with self.lock:
            for role in ROLES:
                spare = self.spares.get(role)
                if spare is not None and spare.child.alive():
                    continue
                if spare is not None:
                    spare.close()  # died while waiting (killed for memory, say): replaced
                session = Session(role, device=self.device, limits_=limits(self.device, role))
                session.prestarted = True
                self.spares[role] = session

    def settle(self, timeout_s: float) -> float:
        """Wait until every spare has finished starting (its import of torch; it answers a ping once it waits for
        its job), at most `timeout_s` seconds in all; returns the seconds waited. An evaluation that started the spares
        during itself (on a GPU, evaluate.py) calls it before its timed phases, so that no import runs beside one.
        A spare that dies or does not answer in time is closed (the next refill replaces it)."""
        from gpu_runner.session import ChildGone

        t0 = time.monotonic()
        with self.settle_lock:  # one caller at a time: two pings on one channel would cross
            with self.lock:
                pending = [(role, s) for role, s in self.spares.items() if s.child.proc.pid not in self.settled]
            for role, session in pending:
                left = timeout_s - (time.monotonic() - t0)
                try:
                    if left <= 0:
                        raise ChildGone("did not finish starting in time", True)
                    session.request("ping", timeout=left)
                    self.settled.add(session.child.proc.pid)
                except ChildGone:
                    with self.lock:
                        if self.spares.get(role) is session:
                            del self.spares[role]
                    session.close()
        return time.monotonic() - t0

    def take(self, role: str) -> Any:
        """The pre-started process for `role`, handed out once; None when there is none alive (start cold)."""
        with self.lock:
            session = self.spares.pop(role, None)
        if session is None:
            return None
        if not session.child.alive():
            session.close()
            return None
        self.handed_out.append((role, session.child.proc.pid))
        self.settled.discard(session.child.proc.pid)  # handed out: no longer a spare
        return session

    def close(self) -> None:
        with self.lock:
            spares, self.spares = list(self.spares.values()), {}
        for session in spares:
            session.close()
