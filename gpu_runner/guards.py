"""Runtime anti-cheat guards for the untrusted child process.

The harness calls, in this order:
1. `install_process_guards()` once, after it captured its own references to timers and torch functions and
   before the solution is imported;
2. `with forward_guard(policy): out = model(*inputs)` around every call of the solution's forward;
3. `integrity_report()` at the end: any finding makes the verdict `rejected`.

These guards live in the same process as the solution, so native code (a C++ or CUDA extension, ctypes)
can defeat them; they raise the cost of the cheap Python-level hacks and make them visible. The real
barriers are out of process: expected outputs are computed in a separate trusted process, and timing is
cross-checked (fresh inputs, checked timed calls, the speed-of-light bound). See docs/ANTICHEAT.md.

Imports nothing from Django: runner hosts lack it.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# aten ops a solution's forward may call without doing the problem's computation in torch: allocation,
# views and metadata, copies and dtype/device moves (a kernel often needs a contiguous input), and fills
# used to initialise an output buffer. Names are the schema name without the overload.
ALLOWED_ATEN_OPS = frozenset(
    {
        # allocation
        "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided",
        "aten::zeros", "aten::zeros_like", "aten::new_zeros", "aten::ones", "aten::ones_like", "aten::new_ones",
        "aten::full", "aten::full_like", "aten::new_full", "aten::fill_", "aten::zero_", "aten::scalar_tensor",
        "aten::lift_fresh", "aten::resize_", "aten::resize_as_",
        # views and metadata
        "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::as_strided", "aten::t", "aten::transpose",
        "aten::permute", "aten::expand", "aten::squeeze", "aten::unsqueeze", "aten::select", "aten::slice",
        "aten::narrow", "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::alias",
        "aten::detach", "aten::flatten", "aten::unflatten", "aten::view_as", "aten::expand_as",
        "aten::view_as_real", "aten::view_as_complex", "aten::_reshape_alias", "aten::unfold",
        "aten::is_same_size", "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset",
        "aten::is_contiguous", "aten::is_nonzero", "aten::_local_scalar_dense", "aten::set_",
        "aten::_has_compatible_shallow_copy_type", "aten::record_stream",
        # copies and moves
        "aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to", "aten::_copy_from",
        "aten::_copy_from_and_resize",
    }
)

# Functions the harness times and synchronises with, or checks with: a solution that replaces any of them
# is trying to change what is measured. Recorded by identity at install time.
_WATCHED_ATTRS: list[tuple[str, str]] = [
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("time", "time"), ("time", "time_ns"), ("time", "process_time"), ("time", "sleep"),
    ("torch", "cuda"), ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch.cuda", "Stream"),
    ("torch.cuda", "current_stream"), ("torch.cuda", "default_stream"), ("torch.cuda", "stream"),
    ("torch.cuda", "set_stream"), ("torch.cuda.Event", "record"), ("torch.cuda.Event", "elapsed_time"),
    ("torch.cuda.Event", "synchronize"), ("torch.cuda.Event", "query"), ("torch.cuda.Stream", "synchronize"),
    ("torch.cuda.Stream", "wait_stream"), ("torch.cuda.Stream", "record_event"),
    ("torch", "allclose"), ("torch", "isclose"), ("torch", "equal"), ("torch", "isnan"), ("torch", "isinf"),
    ("torch", "isfinite"), ("torch", "abs"), ("torch", "max"), ("torch", "sum"), ("torch", "manual_seed"),
    ("torch", "randn"), ("torch", "rand"), ("torch", "randint"), ("torch", "empty"), ("torch", "empty_like"),
    ("torch", "clone"), ("torch", "Tensor"), ("torch.Tensor", "clone"), ("torch.Tensor", "copy_"),
    ("torch.Tensor", "to"), ("torch.Tensor", "cpu"), ("torch.Tensor", "cuda"), ("torch.Tensor", "__eq__"),
    ("torch.Tensor", "__sub__"), ("torch.Tensor", "abs"), ("torch.Tensor", "float"), ("torch.Tensor", "fill_"),
    ("torch.Tensor", "data_ptr"), ("torch.Tensor", "numpy"), ("torch.Tensor", "tolist"),
    ("torch.Tensor", "__torch_function__"), ("torch.Tensor", "__torch_dispatch__"),
    ("torch.testing", "assert_close"), ("torch.nn.Module", "__call__"), ("torch.nn.Module", "_call_impl"),
    ("builtins", "print"), ("builtins", "open"), ("builtins", "isinstance"), ("builtins", "type"),
    ("sys", "exit"), ("os", "_exit"), ("json", "dumps"), ("json", "dump"), ("pickle", "dumps"),
    ("pickle", "dump"), ("gc", "collect"),
]

# Audit events that mean the solution is looking for the harness's objects or frames, or leaving the sandbox.
# Always blocked once the guards are installed (import time included).
_AUDIT_ALWAYS = {
    "gc.get_objects": "gc.get_objects() walks every object in the process, the harness's included",
    "gc.get_referrers": "gc.get_referrers() finds the harness's objects that refer to yours",
    "gc.get_referents": "gc.get_referents() walks into the harness's objects",
    "sys._current_frames": "sys._current_frames() reads the stack of every thread, the harness's included",
    "sys.settrace": "sys.settrace() lets code watch and change the harness while it runs",
    "sys.setprofile": "sys.setprofile() lets code watch the harness while it runs",
    "socket.connect": "network access is not allowed",
    "socket.bind": "network access is not allowed",
    "socket.getaddrinfo": "network access is not allowed",
    "os.fork": "forking a process is not allowed",
    "os.forkpty": "forking a process is not allowed",
    "sys.addaudithook": "adding an audit hook is not allowed",
    "cpython.PyInterpreterState_Clear": "touching the interpreter state is not allowed",
    "cpython._PySys_ClearAuditHooks": "touching the interpreter state is not allowed",
}
# Blocked only while the solution's forward runs (honest libraries use some of them at import time:
# namedtuple and typing call sys._getframe; torch's extension builder starts ninja in a subprocess).
_AUDIT_IN_FORWARD = {
    "sys._getframe": "frame inspection (sys._getframe / inspect.currentframe / inspect.stack) reads the harness's state",
    "subprocess.Popen": "starting a process in forward is not allowed",
    "os.system": "starting a process in forward is not allowed",
    "os.exec": "starting a process in forward is not allowed",
    "os.posix_spawn": "starting a process in forward is not allowed",
    "os.spawn": "starting a process in forward is not allowed",
    "os.putenv": "changing the environment in forward is not allowed",
    "os.unsetenv": "changing the environment in forward is not allowed",
    "ctypes.dlopen": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.dlsym": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.addressof": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.cdata": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.string_at": "reading raw memory with ctypes is not allowed",
    "ctypes.wstring_at": "reading raw memory with ctypes is not allowed",
    "ctypes.call_function": "ctypes in forward is not allowed: write the kernel as an extension",
}
# Frame attributes whose access is audited as object.__getattr__ (tracebacks, generators, coroutines):
# the other ways to climb from an object to the harness's frames.
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"}


class GuardViolation(RuntimeError):
    """Raised inside the solution when it does something the rules forbid; the finding is also recorded."""


_findings: list[dict] = []
_seen: set[tuple[str, str]] = set()
_watched: dict[str, Any] = {}
_installed = False
_in_forward = 0
_baseline_threads: set[int] = set()
_baseline_native: set[int] = set()
_native_frozen = False
_forward_calls = 0
_harness_frame_codes: set[Any] = set()


def _add(rule: str, detail: str) -> None:
    key = (rule, detail)
    if key not in _seen:
        _seen.add(key)
        _findings.append({"rule": rule, "detail": detail})


def _resolve(dotted: str) -> Any:
    obj: Any = sys.modules.get(dotted.split(".")[0])
    if obj is None:
        return None
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _snapshot_watched() -> dict[str, Any]:
    snap: dict[str, Any] = {}
    for owner, attr in _WATCHED_ATTRS:
        holder = _resolve(owner)
        if holder is None:
            continue
        # Class attributes are compared through __dict__ so that a descriptor's identity is what counts.
        value = holder.__dict__.get(attr, None) if isinstance(holder, type) else getattr(holder, attr, None)
        if value is not None:
            snap[f"{owner}.{attr}"] = value
    return snap


def _check_watched() -> None:
    now = _snapshot_watched()
    for name, original in _watched.items():
        if now.get(name) is not original:
            _add(
                "timer_or_harness_patched",
                f"{name} was replaced; the solution must not patch timers, synchronisation, "
                "checks or torch itself: remove the assignment",
            )


def _native_threads() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def _python_threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


def _audit_hook(event: str, args: tuple[Any, ...]) -> None:
    if not _installed:
        return
    detail = _AUDIT_ALWAYS.get(event)
    if detail is None and _in_forward:
        detail = _AUDIT_IN_FORWARD.get(event)
    if detail is None and event == "object.__getattr__" and len(args) >= 2 and args[1] in _FRAME_ATTRS:
        if _in_forward:
            detail = f"reading .{args[1]} climbs into the harness's frames"
    if detail is None and event == "open" and len(args) >= 2 and _in_forward:
        mode = args[1] if isinstance(args[1], str) else ""
        if any(c in mode for c in "wax+") and not str(args[0]).endswith(".pyc"):
            detail = f"writing files in forward is not allowed (opened {args[0]!r} with mode {mode!r})"
    if detail is None:
        return
    _add("forbidden_call", f"{event}: {detail}")
    raise GuardViolation(f"KernelHub anti-cheat: {event} is not allowed here ({detail})")


def install_process_guards() -> None:
    """Record the identities the harness relies on, the threads alive now, and block introspection.

    Called once in the child, after the harness captured its own references, before the solution is
    imported. Calling it again does nothing.
    """
    global _installed, _watched, _baseline_threads, _baseline_native
    if _installed:
        return
    import json  # noqa: F401  (watched for patching: the harness reports with it)
    import pickle  # noqa: F401

    # Objects created from here on are not found by gc anyway once get_objects is blocked; freezing moves
    # the harness's objects out of the collector's generations so a later gc pass does not touch them.
    gc.freeze()
    # Entering a dispatch mode imports torch._dynamo lazily: do it now, before the solution can interfere
    # and before the audit hook would see the imports as the solution's doing.
    with _BlockTorchCompute(ALLOWED_ATEN_OPS):
        torch.empty(1)
    _watched = _snapshot_watched()
    _baseline_threads = _python_threads()
    _baseline_native = _native_threads()
    sys.addaudithook(_audit_hook)
    _installed = True


class _BlockTorchCompute(TorchDispatchMode):
    """Raises on every aten op that computes, unless the problem allows it."""

    def __init__(self, allowed: frozenset[str]) -> None:
        super().__init__()
        self.allowed = allowed

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        schema_name = func._schema.name
        full_name = f"{schema_name}.{func._overloadname}"
        if schema_name not in self.allowed and full_name not in self.allowed:
            detail = (
                f"the forward called the torch op {full_name}; a solution must compute in its own kernel "
                "(torch fallbacks such as torch.nn.functional, tensor methods, torch.ops.aten, torch.compile "
                "or the reference Model are not allowed for this problem)"
            )
            _add("torch_fallback", detail)
            raise GuardViolation(f"KernelHub anti-cheat: {detail}")
        return func(*args, **(kwargs or {}))


def _allowed_ops(policy: dict) -> frozenset[str]:
    extra = policy.get("allow_torch") or []
    names = set()
    for name in extra:
        name = str(name)
        names.add(name if "::" in name else f"aten::{name}")
    return ALLOWED_ATEN_OPS | names


@contextlib.contextmanager
def forward_guard(policy: dict) -> Iterator[None]:
    """Wrap one call of the solution's forward.

    policy keys (all optional): "allow_torch" (list of aten op names, "aten::mm" or "aten::mm.default"),
    "block_torch" (default True: torch compute ops raise), "check_stream" (default True on CUDA).
    """
    global _in_forward, _forward_calls
    block = policy.get("block_torch", True)
    cuda_ready = torch.cuda.is_available() and torch.cuda.is_initialized()
    stream_before = torch.cuda.current_stream() if cuda_ready else None
    mode = _BlockTorchCompute(_allowed_ops(policy)) if block else contextlib.nullcontext()
    _in_forward += 1
    try:
        with mode:
            yield
    finally:
        _in_forward -= 1
        _forward_calls += 1
        _after_forward(policy, stream_before)


def _after_forward(policy: dict, stream_before: Any) -> None:
    global _native_frozen, _baseline_native
    _check_watched()
    new_py = _python_threads() - _baseline_threads
    alive = [t for t in threading.enumerate() if t.ident in new_py and t.is_alive()]
    if alive:
        names = ", ".join(sorted(t.name for t in alive))
        _add(
            "background_thread",
            f"threads started by the solution are still running after forward returned ({names}); "
            "all work must finish inside forward",
        )
    # Native thread pools (OpenMP, torch's intra-op pool) start on the first call; after it, the set of
    # native threads must not grow: a new one is work escaping forward.
    native = _native_threads()
    if not _native_frozen:
        _baseline_native |= native
        _native_frozen = True
    elif native - _baseline_native:
        _add(
            "background_thread",
            f"{len(native - _baseline_native)} native thread(s) appeared after the first forward call; "
            "start no threads that outlive forward",
        )
        _baseline_native |= native
    if policy.get("check_stream", True) and torch.cuda.is_available() and torch.cuda.is_initialized():
        current = torch.cuda.current_stream()
        if current != torch.cuda.default_stream() or (stream_before is not None and current != stream_before):
            _add(
                "stream_switch",
                "forward returned with a non-default CUDA stream current; launch on the current stream "
                "(torch.cuda.current_stream()) or synchronise your streams with it before returning",
            )
    if sys.gettrace() is not None or sys.getprofile() is not None:
        _add("tracer_installed", "a trace or profile function was installed; remove it")
    if builtins.print is not _watched.get("builtins.print", builtins.print):
        _add("timer_or_harness_patched", "builtins.print was replaced; do not patch builtins")


def integrity_report() -> list[dict]:
    """Findings gathered so far; a final check of the watched identities and threads is made now."""
    if _installed:
        _check_watched()
        new_py = _python_threads() - _baseline_threads
        alive = [t for t in threading.enumerate() if t.ident in new_py and t.is_alive()]
        if alive:
            _add(
                "background_thread",
                "threads started by the solution are still running at the end ("
                + ", ".join(sorted(t.name for t in alive))
                + "); all work must finish inside forward",
            )
    return [dict(f) for f in _findings]
