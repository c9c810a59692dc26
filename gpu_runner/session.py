"""The parent's side of one child process of an evaluation (`Session`), the two ways its requests end (`trusted`,
for the problem's own code: a failure is the evaluator's or the problem's; `untrusted`, for the solution's: a
failure is a verdict), the verdict and error types every phase raises, and each role's limits.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from gpu_runner import config, ipc, sandbox
from gpu_runner.protocol import ChannelClosed, ChannelTimeout, ProtocolError, load_tensors

MAX_OUTPUT_FILE = 8 << 30
# A trusted child's output file over this size is mapped by the parent, not copied into its memory.
MMAP_OVER = 64 << 20
# The requests whose replies name saved outputs: a lent slot is poisoned before each.
SAVING_OPS = frozenset({"trial", "save_batch", "profile", "replay", "set_outputs"})


class Verdict(Exception):
    def __init__(self, verdict: str, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.verdict, self.message, self.rule = verdict, message, rule


class EvaluatorError(RuntimeError):
    """A failure of the evaluator or of the problem, not of the solution."""


class ChildFailed(Exception):
    def __init__(self, kind: str, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.rule = kind, message, rule


class ChildGone(Exception):
    def __init__(self, how: str, timed_out: bool) -> None:
        super().__init__(how)
        self.how, self.timed_out = how, timed_out


class Session:
    """The parent's side of one child: send an op, serve build requests, return the reply."""

    def __init__(self, role: str, *, device: str, limits_: sandbox.Limits,
                 on_build: Callable[[Any], dict[str, Any]] | None = None,
                 settings: config.RunnerConfig | None = None) -> None:
        self.role = role
        settings = settings or config.RunnerConfig.from_env()
        # A request's default deadline (KERNELHUB_STEP_TIMEOUT_S); the evaluation's own settings at begin().
        self.step_timeout_s = settings.step_timeout_s
        self.workdir = sandbox.new_workdir(f"{role}-")
        # The settings the child acts on itself, from the parent's settings rather than its environment.
        own = {"KERNELHUB_HEAD_START_MAX_US": repr(settings.head_start_max_us),
               "KERNELHUB_WINDOW_DRAIN": "1" if settings.window_drain else "0",
               "CUDA_DEVICE_MAX_CONNECTIONS": str(settings.cuda_device_max_connections)}
        self.child = sandbox.spawn(["-m", "gpu_runner.child", role], workdir=self.workdir, limits=limits_,
                                   extra_env=own)
        self.on_build = on_build
        self.started = time.monotonic()
        self.wall_limit = limits_.wall_s
        self.build_seconds = 0.0
        self.prestarted = False  # set by gpu_runner/warm.py for a child started before its job
        self.lock_wait_s = 0.0  # spent by the parent waiting for the host's GPU lock: not the child's time
        # Per op: [requests, seconds by the parent's clock, build time and waits for the device lock excluded]:
        # where an evaluation's time goes.
        self.op_seconds: dict[str, list[float]] = {}
        self.slot: ipc.Slot | None = None  # device memory lent to the child for its outputs (lend_slot)
        self.lent = False  # the child mapped it: its saves may be markers
        self.pending_fds: list[int] = []  # a capability slot's descriptor, sent right after the next request
        # Where the solution is paused between its requests (context.py, KERNELHUB_PAUSE_SOLUTION): what each
        # request runs inside (the device lock, the child continued, then stopped), and the extra fields it sends.
        self.turn: Callable[[Session, str], AbstractContextManager[dict[str, Any]]] | None = None
        self._paused: list[int] | None = None  # the descendants stopped with the child, while it is stopped
        self.pauses = 0

    def begin(self, on_build: Callable[[Any], dict[str, Any]] | None,
              settings: config.RunnerConfig | None = None) -> None:
        """A pre-started child takes its job, under the job's settings where given: its life is counted from now
        (gpu_runner/warm.py)."""
        self.on_build = on_build
        if settings is not None:
            self.step_timeout_s = settings.step_timeout_s
        self.started = time.monotonic()

    def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        t0, built, waited = time.monotonic(), self.build_seconds, self.lock_wait_s
        try:
            if self.turn is None:
                return self._request(op, timeout=timeout, **fields)
            with self.turn(self, op) as extra:
                return self._request(op, timeout=timeout, **fields, **extra)
        finally:
            entry = self.op_seconds.setdefault(op, [0, 0.0])
            entry[0] += 1
            entry[1] += time.monotonic() - t0 - (self.build_seconds - built) - (self.lock_wait_s - waited)

    def _request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        channel = self.child.channel
        if self.lent and self.slot is not None and op in SAVING_OPS:
            self.slot.poison()  # what the child leaves out reads as NaN, not as an earlier output
        try:
            channel.send({"op": op, **fields})
            if self.pending_fds:
                fds, self.pending_fds = self.pending_fds, []
                channel.send_fds(fds)
        except ChannelClosed:
            raise ChildGone(self.child.exit_description(), False) from None
        deadline = time.monotonic() + (timeout or self.step_timeout_s)
        # The child's whole life is bounded too (build time excluded): a slow drip of answers ends as well.
        life_end = self.started + self.build_seconds + self.lock_wait_s + self.wall_limit
        while True:
            try:
                msg = channel.recv(deadline=min(deadline, life_end))
            except ChannelTimeout:
                raise ChildGone("did not answer in time", True) from None
            except (ChannelClosed, ProtocolError):
                time.sleep(0.05)
                raise ChildGone(self.child.exit_description(), False) from None
            if msg.get("op") == "build" and self.on_build is not None:
                t0 = time.monotonic()
                reply = self.on_build(msg.get("request"))
                spent = time.monotonic() - t0
                deadline += spent
                self.build_seconds += spent
                life_end += spent
                channel.send(reply)
                continue
            if "op" in msg:
                raise ChildGone("sent an unexpected message", False)
            if not msg.get("ok"):
                kind = msg.get("kind")
                kind = kind if kind in ("compile_error", "runtime_error", "rejected", "internal") else "runtime_error"
                rule = msg.get("rule") if isinstance(msg.get("rule"), str) else None
                raise ChildFailed(kind, str(msg.get("message", ""))[:4000], rule)
            return msg

    def pause(self, wait_s: float = 2.0) -> None:
        """Stop the child and its descendants (sandbox.pause) until resume(), and wait up to wait_s until every
        thread of them is seen stopped; nothing where it is stopped or gone."""
        if self._paused is None and self.child.alive():
            self._paused = sandbox.pause(self.child)
            self.pauses += 1
            until = time.monotonic() + wait_s
            while not sandbox.all_stopped(self.child, self._paused) and time.monotonic() < until:
                time.sleep(0.001)

    def resume(self) -> None:
        if self._paused is not None:
            pids, self._paused = self._paused, None
            sandbox.resume(self.child, pids)

    @property
    def paused(self) -> bool:
        return self._paused is not None

    def tensors(self, name: Any, *, trusted: bool = False) -> list[Any]:
        """The tensors the child saved as `name`: copied out of the lent slot where the file is its marker
        (ipc.py), else read from the file; a trusted child's large files are mapped (protocol.py)."""
        if not isinstance(name, str) or "\x00" in name:
            raise ProtocolError(f"bad output file name {name!r:.80}")
        if self.lent and "/" not in name and not name.startswith("."):
            raw = marker(self.workdir / name)
            if raw is not None:
                assert self.slot is not None
                try:
                    return self.slot.read(ipc.read_marker(raw))
                except Exception as e:  # noqa: BLE001 - a malformed marker, or no memory for it: the child's fault
                    raise ProtocolError(f"output {name} in the lent device memory could not be read: "
                                        f"{type(e).__name__}: {str(e)[:300]}") from None
        return load_tensors(self.workdir, name, max_bytes=MAX_OUTPUT_FILE, mmap_over=MMAP_OVER if trusted else None)

    def lend_slot(self, nbytes: int, request: Callable[..., dict[str, Any]], *,
                  capability: bool = False) -> dict[str, Any]:
        """Lend the child `nbytes` of device memory for its outputs (ipc.py), offered through `request` (the
        ipc_slot op); what came of it, for the result. capability: a slot whose only key is a descriptor passed
        to this child alone (ipc.CapabilitySlot), else a legacy IPC handle. The slot is freed by close(), once
        the child is gone, whatever the child answered: a child that says it could not map it may have."""
        try:
            self.slot = ipc.CapabilitySlot(nbytes) if capability else ipc.Slot(nbytes)
        except Exception as e:  # noqa: BLE001 - no CUDA IPC here: files serve
            return {"way": "files", "why": f"no slot: {str(e)[:300]}"}
        if isinstance(self.slot, ipc.CapabilitySlot):
            self.pending_fds = [self.slot.fd]
        try:
            reply = request(**self.slot.offer())
        finally:
            self.pending_fds = []
            if isinstance(self.slot, ipc.CapabilitySlot):
                self.slot.close_fd()  # the child has its copy; this process keeps the mapping
        if not reply.get("mapped"):
            return {"way": "files", "why": f"the child could not map the slot: {str(reply.get('why'))[:300]}"}
        self.lent = True
        return {"way": "cuda_ipc_fd" if capability else "cuda_ipc", "slot_bytes": self.slot.nbytes}

    def close(self) -> list[int]:
        try:
            if self.child.alive():
                self.child.channel.send({"op": "exit"})
        except ChannelClosed:
            pass
        killed = sandbox.kill(self.child)
        if self.slot is not None:
            self.slot.free()  # after the child is gone: nothing maps it any more
            self.slot = None
        return killed


def marker(path: Path) -> bytes | None:
    """The bytes of a child's output file where it is a marker of the lent slot (ipc.MAGIC first), else None
    (load_tensors then reads it, or says what is wrong with it). Opened without following a link and without
    blocking; only a regular file, checked on the open descriptor, so nothing swapped in after a check is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = fh.read(len(ipc.MAGIC)) or b""
            if raw != ipc.MAGIC:
                return None
            return raw + (fh.read(ipc.MAX_MARKER_BYTES) or b"")
        except OSError:
            return None


# A trusted child (the reference, torch.compile's) runs the problem's own code, not the submission's: its
# address space may be this many times the solution's. The memory plan (memory_plan.py) is what keeps it within
# the host's memory; the limit only stops a runaway problem.
TRUSTED_MEMORY_FACTOR = 1.5
# A build slot's child on a GPU host imports a CUDA build of torch, whose libraries map more address space than
# the CPU wheel's: its limit is this many times the CPU track's.
BUILD_SLOT_MEMORY_FACTOR = 2.0


def address_space_ceiling(settings: config.RunnerConfig) -> int:
    """The address-space limit a CPU child starts with when the plan sets the solution's: the host's memory
    (the cgroup's limit where lower), and never less than a fixed setting's trusted child had."""
    from gpu_runner import memory_plan

    return max(int(settings.child_memory_bytes() * TRUSTED_MEMORY_FACTOR), memory_plan.host_total() or 0)


def limits(device: str, role: str = "solution", *, gpu: bool = True,
           settings: config.RunnerConfig | None = None) -> sandbox.Limits:
    """gpu=False: a build slot's child, which sees no GPU, and so gets an address-space limit as on the CPU.
    settings: the evaluation's (KERNELHUB_CHILD_WALL_S, KERNELHUB_CHILD_MEMORY_GB); by default the environment's."""
    settings = settings or config.RunnerConfig.from_env()
    wall = settings.child_wall_s
    mem = None if device == "cuda" and gpu else settings.child_memory_bytes()
    if mem is not None and device == "cuda":
        mem = int(mem * BUILD_SLOT_MEMORY_FACTOR)
        if role != "solution":
            mem = int(mem * TRUSTED_MEMORY_FACTOR)
    elif mem is not None and settings.child_memory_from_plan():
        # Every CPU child starts at the ceiling: the trusted ones keep it (the plan and the host's memory ledger
        # keep them within the host's memory, the limit only stops a runaway problem), the solution's harness
        # lowers its own at its load, before it imports the solution, to what the plan sets
        # (memory_plan.solution_address_space), which no process without CAP_SYS_RESOURCE can raise again.
        mem = address_space_ceiling(settings)
    elif mem is not None and role != "solution":
        mem = int(mem * TRUSTED_MEMORY_FACTOR)
    # A CPU-track child sees no GPU (as a build slot's): the track times CPU work, and CUDA work there would be
    # neither what it ranks nor within its memory plan.
    return sandbox.Limits(wall_s=wall, cpu_s=int(wall * (os.cpu_count() or 1)), memory_bytes=mem,
                          gpu=gpu and device == "cuda")


def trusted(s: Session, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
    """A request to a child that runs the problem's own code: its failure is the problem's or the evaluator's."""
    try:
        return s.request(op, timeout=timeout, **fields)
    except ChildFailed as e:
        raise EvaluatorError(f"the reference ({s.role}) failed at {op}: {e.message}") from None
    except ChildGone as e:
        raise EvaluatorError(f"the reference ({s.role}) process {e.how} at {op}:\n{s.child.log_tail()}") from None


def untrusted(s: Session, op: str, what: str, *, timeout: float | None = None,
              **fields: Any) -> dict[str, Any]:
    """A request to the solution's child (`what` it was doing, for the message): its failure is a verdict."""
    try:
        return s.request(op, timeout=timeout, **fields)
    except ChildFailed as e:
        if e.kind == "rejected":
            raise Verdict("rejected", f"rule {e.rule or 'anti_cheat'} broken while {what}: {e.message}",
                          e.rule or "anti_cheat") from None
        if e.kind == "internal":
            raise EvaluatorError(e.message) from None
        raise Verdict(e.kind, f"{what}: {e.message}") from None
    except ChildGone as e:
        if e.timed_out:
            limit = timeout or s.step_timeout_s
            raise Verdict("timeout", f"the solution did not finish {what} within {limit:.0f} s "
                                     "(the evaluation process was killed)") from None
        tail = s.child.log_tail(1500).strip()
        raise Verdict("runtime_error", f"the solution's process {e.how} while {what}"
                      + (f"; its last output:\n{tail}" if tail else "")) from None
