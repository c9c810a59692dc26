"""Runtime anti-cheat guards for the untrusted child process.

The harness calls, in this order:
1. `install_process_guards()` once, after it captured its own references to timers and torch functions and
   before the solution is imported;
2. `with forward_guard(policy): out = model(*inputs)` around every call of the solution's forward;
3. `integrity_report()` at the end: any finding makes the verdict `rejected`.

These guards live in the same process as the solution, so native code (a C++ or CUDA extension, ctypes)
can defeat them; they raise the cost of the cheap Python-level hacks and make them visible. The barriers a
determined attacker meets next are out of process: expected outputs are computed in a separate trusted
process, and timing is cross-checked (fresh inputs, checked timed calls, the speed-of-light bound).
See docs/ANTICHEAT.md.

Imports nothing from Django: runner hosts lack it.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import random
import sys
import threading
import types
from collections.abc import Iterator
from types import FrameType
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from gpu_runner import config
from gpu_runner.anticheat import CUPY_ADVICE, CUPY_ARRAY_COMPUTE_METHODS, CUPY_GLUE, CUPY_LIBRARY_MODULES

# aten ops a solution's forward may call without doing the problem's computation in torch: allocation,
# views and metadata, copies and dtype/device moves (a kernel often needs a contiguous input), and fills
# used to initialise an output buffer. Names are schema names without the overload.
ALLOWED_ATEN_OPS = frozenset(
    {
        # allocation and fills
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
        "aten::_has_compatible_shallow_copy_type", "aten::record_stream", "aten::size", "aten::stride",
        "aten::numel", "aten::dim", "aten::item", "aten::is_floating_point", "aten::is_complex",
        "aten::result_type", "aten::detach_", "aten::lift_fresh_copy",
        # composites the profiler names although they only reach the ops above
        "aten::mT", "aten::mH", "aten::numpy_T", "aten::matrix_H", "aten::adjoint", "aten::movedim",
        "aten::moveaxis", "aten::swapaxes", "aten::swapdims", "aten::ravel", "aten::type_as",
        "aten::resolve_conj", "aten::resolve_neg",
        # copies and moves
        "aten::copy_", "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to", "aten::_copy_from",
        "aten::_copy_from_and_resize",
    }
)

# Functions and classes the harness times, synchronises, checks or reports with: a solution that replaces
# any of them is trying to change what is measured. Recorded by identity at install time.
_WATCHED_ATTRS: list[tuple[str, str]] = [
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("time", "time"), ("time", "time_ns"), ("time", "process_time"), ("time", "sleep"),
    ("torch", "cuda"), ("torch.cuda", "synchronize"), ("torch._C", "_cuda_synchronize"), ("torch.cuda", "Event"),
    ("torch.cuda", "Stream"),
    ("torch.cuda", "current_stream"), ("torch.cuda", "default_stream"), ("torch.cuda", "stream"),
    ("torch.cuda", "set_stream"), ("torch.cuda", "is_available"), ("torch.cuda.Event", "record"),
    ("torch.cuda.Event", "elapsed_time"), ("torch.cuda.Event", "synchronize"), ("torch.cuda.Event", "query"),
    ("torch.cuda.Event", "wait"), ("torch.cuda.Stream", "synchronize"), ("torch.cuda.Stream", "wait_stream"),
    ("torch.cuda.Stream", "record_event"), ("torch.cuda.Stream", "query"),
    ("torch", "allclose"), ("torch", "isclose"), ("torch", "equal"), ("torch", "isnan"), ("torch", "isinf"),
    ("torch", "isfinite"), ("torch", "abs"), ("torch", "max"), ("torch", "sum"), ("torch", "where"),
    ("torch", "manual_seed"), ("torch", "randn"), ("torch", "rand"), ("torch", "randint"), ("torch", "empty"),
    ("torch", "empty_like"), ("torch", "full_like"), ("torch", "clone"), ("torch", "save"), ("torch", "load"),
    ("torch", "Tensor"), ("torch", "Generator"), ("torch.Tensor", "clone"), ("torch.Tensor", "copy_"),
    ("torch.Tensor", "to"), ("torch.Tensor", "cpu"), ("torch.Tensor", "cuda"), ("torch.Tensor", "__eq__"),
    ("torch.Tensor", "__sub__"), ("torch.Tensor", "abs"), ("torch.Tensor", "float"), ("torch.Tensor", "fill_"),
    ("torch.Tensor", "data_ptr"), ("torch.Tensor", "numpy"), ("torch.Tensor", "tolist"),
    ("torch.Tensor", "__torch_function__"), ("torch.Tensor", "__torch_dispatch__"), ("torch.Tensor", "__del__"),
    ("torch.testing", "assert_close"), ("torch.nn.Module", "__call__"), ("torch.nn.Module", "_call_impl"),
    ("torch.nn.Module", "load_state_dict"), ("torch.nn.Module", "state_dict"),
    ("builtins", "print"), ("builtins", "open"), ("builtins", "isinstance"), ("builtins", "type"),
    ("builtins", "len"), ("builtins", "float"), ("builtins", "min"), ("builtins", "max"), ("builtins", "sorted"),
    ("sys", "exit"), ("os", "_exit"), ("json", "dumps"), ("json", "dump"), ("json", "loads"),
    ("statistics", "median"), ("math", "isfinite"), ("math", "sqrt"), ("socket", "socket"),
]
_WATCHED_BY_OWNER: dict[str, list[tuple[str, str]]] = {}  # owner -> (attribute, "owner.attribute")
for _owner, _attr in _WATCHED_ATTRS:
    _WATCHED_BY_OWNER.setdefault(_owner, []).append((_attr, f"{_owner}.{_attr}"))
_MISSING = object()

# Settings that change the precision torch's own ops run at (the baselines are measured with TF32 off).
_PRECISION_SETTINGS = {
    "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    "torch.get_float32_matmul_precision()": lambda: torch.get_float32_matmul_precision(),
    "torch.get_default_dtype()": lambda: torch.get_default_dtype(),
    "torch.is_grad_enabled()": lambda: torch.is_grad_enabled(),
}

# Audit events that mean the solution is looking for the harness's objects or frames, or leaving the
# sandbox. Blocked from install on (solution import included).
_AUDIT_ALWAYS = {
    "gc.get_objects": "gc.get_objects() walks every object in the process, the harness's included",
    "gc.get_referrers": "gc.get_referrers() finds the harness's objects that refer to yours",
    "gc.get_referents": "gc.get_referents() walks into the harness's objects",
    "sys._current_frames": "sys._current_frames() reads the stack of every thread, the harness's included",
    "sys.settrace": "sys.settrace() lets code watch and change the harness while it runs",
    "sys.setprofile": "sys.setprofile() lets code watch the harness while it runs",
    "sys.addaudithook": "audit hooks are the evaluator's",
    "socket.__new__": "network access is not allowed",
    "socket.connect": "network access is not allowed",
    "socket.bind": "network access is not allowed",
    "socket.sendto": "network access is not allowed",
    "socket.getaddrinfo": "network access is not allowed",
    "socket.gethostbyname": "network access is not allowed",
    "os.fork": "forking the process is not allowed",
    "os.forkpty": "forking the process is not allowed",
    "os.kill": "signalling processes is not allowed",
    "os.killpg": "signalling processes is not allowed",
    "signal.pthread_kill": "signalling threads is not allowed",
    "ctypes.string_at": "reading raw memory with ctypes is not allowed",
    "ctypes.wstring_at": "reading raw memory with ctypes is not allowed",
    "cpython.PyInterpreterState_Clear": "touching the interpreter state is not allowed",
    "cpython._PySys_ClearAuditHooks": "touching the interpreter state is not allowed",
    "sys.unraisablehook": "replacing error hooks is not allowed",
    "sys.excepthook": "replacing error hooks is not allowed",
}
# Blocked only while the solution's forward runs: honest libraries use some of them at import time
# (namedtuple and typing call sys._getframe; torch's extension builder starts ninja in a subprocess).
_AUDIT_IN_FORWARD = {
    "sys._getframe": "frame inspection (sys._getframe, inspect.currentframe, inspect.stack) reads the harness's state",
    "os.putenv": "changing the environment in forward is not allowed",
    "os.unsetenv": "changing the environment in forward is not allowed",
    "ctypes.dlopen": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.dlsym": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.addressof": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.cdata": "ctypes in forward is not allowed: write the kernel as an extension",
    "ctypes.call_function": "ctypes in forward is not allowed: write the kernel as an extension",
}
# Starting programs: the parent builds extensions (child.py redirects load_inline), so the solution's process
# has no need to; only libraries compiling their own kernels may (Triton runs ptxas and ldconfig).
_AUDIT_PROCESS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile"}
# Frame attributes whose access is audited as object.__getattr__ (tracebacks, generators, coroutines):
# the other ways to climb from an object to the harness's frames.
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"}
# Code allowed to write files outside the child's directory: the extension builders write their build
# caches, and the import system writes bytecode.
_TRUSTED_WRITERS = (
    os.path.join("torch", "utils", "cpp_extension.py"),
    os.path.join("torch", "utils", "file_baton.py"),
    os.path.join("torch", "utils", "_cpp_extension_versioner.py"),
    os.sep + "triton" + os.sep,
    os.sep + "cupy" + os.sep,
    os.sep + "cupy_backends" + os.sep,
    "<frozen importlib._bootstrap_external>",
)
# Libraries allowed to do, during forward, what a solution may not: compile kernels on first use.
_TRUSTED_IN_FORWARD = (
    os.sep + "triton" + os.sep,
    os.sep + "cupy" + os.sep,
    os.sep + "cupy_backends" + os.sep,
    os.sep + "fastrlock" + os.sep,
    os.sep + os.path.join("cuda", "pathfinder") + os.sep,
    os.sep + os.path.join("cuda", "bindings") + os.sep,
    "<frozen importlib",
)
_TRUSTED_PROGRAM_STARTERS = _TRUSTED_IN_FORWARD + (
    os.path.join("torch", "utils", "cpp_extension.py"),
)
_TORCH_DIR = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,)
_HARNESS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


RECORD_FIRST_CALLS = 16
RECORD_ONE_IN = 8
_sampler = random.SystemRandom()  # from the OS: a solution cannot seed or predict it


class GuardViolation(RuntimeError):
    """Raised inside the solution when it does something the rules forbid; the finding is also recorded."""


_findings: list[dict] = []
_seen: set[tuple[str, str]] = set()
_watched: dict[str, Any] = {}
_precision: dict[str, Any] = {}
_installed = False
_in_forward = 0
_in_hook = False
_baseline_threads: set[int] = set()
_forward_calls = 0
_last_recorded = False  # whether the op record ran on the latest call (last_call_recorded)
_cwd = ""
_pid = 0
_private_roots_cache: list[str] = []
_profiler_failed: list[str] = []  # why torch's profiler could not start here, if it could not
_itt_failed: list[str] = []  # why the ITT decoy could not start here, if it could not
_real_start_new_thread = _thread.start_new_thread


def _add(rule: str, detail: str, _findings: list = _findings, _seen: set = _seen) -> None:
    # The lists are bound at definition: rebinding the module's names does not redirect findings.
    key = (rule, detail)
    if key not in _seen:
        _seen.add(key)
        _findings.append({"rule": rule, "detail": detail})


def _violation(rule: str, detail: str) -> GuardViolation:
    _add(rule, detail)
    return GuardViolation(f"KernelHub anti-cheat ({rule}): {detail}")


def _resolve(dotted: str) -> Any:
    obj: Any = sys.modules.get(dotted.split(".")[0])
    for part in dotted.split(".")[1:]:
        if obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj


def _lookup(holder: Any, attr: str) -> Any:
    # On classes, read the raw attribute through the MRO: getattr would build a new bound object each time.
    if isinstance(holder, type):
        for klass in holder.__mro__:
            if attr in klass.__dict__:
                return klass.__dict__[attr]
        return _MISSING
    return getattr(holder, attr, _MISSING)


def _snapshot_watched() -> dict[str, Any]:
    # Each owner resolved once per snapshot (15 owners for 87 names): resolving every name's owner anew cost some
    # 170 us a call on the development machine, on every forward's exit, in the solution's process and in the
    # trusted null call alike.
    snap: dict[str, Any] = {}
    for owner, attrs in _WATCHED_BY_OWNER.items():
        holder = _resolve(owner)
        if holder is not None:
            for attr, key in attrs:
                snap[key] = _lookup(holder, attr)
    return snap


def _check_watched() -> None:
    _check_library_guards()
    now = _snapshot_watched()
    for name, original in _watched.items():
        if now.get(name, _MISSING) is not original:
            _add(
                "harness_patched",
                f"{name} was replaced or removed; a solution must not patch timers, synchronisation, checks, "
                "builtins or torch itself: remove the assignment",
            )
    for name, read in _PRECISION_SETTINGS.items():
        try:
            value = read()
        except Exception:  # noqa: BLE001 - a setting the build lacks cannot have been changed
            continue
        if name in _precision and value != _precision[name]:
            _add(
                "precision_changed",
                f"{name} was changed from {_precision[name]!r} to {value!r}; torch's precision settings are the "
                "evaluator's: do not change them (a lower-precision kernel of your own is judged by the tolerance)",
            )


_TASKS_DIR = "/proc/self/task"


def _native_threads() -> set[int]:
    try:
        return {int(t) for t in os.listdir(_TASKS_DIR)}
    except OSError:
        return set()


def _python_threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


def _guarded_start_new_thread(function: Any, args: Any, kwargs: Any = None) -> int:
    """Replaces _thread.start_new_thread: a thread started in forward is work escaping the timer."""
    if _in_forward and not _trusted_now(_TRUSTED_IN_FORWARD):
        raise _violation(
            "background_thread",
            "the forward started a thread; all work must run in your kernel within the call "
            "(OpenMP parallel loops in C++ are fine)",
        )
    if kwargs is None:
        return _real_start_new_thread(function, args)
    return _real_start_new_thread(function, args, kwargs)


def _caller_is_trusted(markers: tuple[str, ...], skip: tuple[str, ...] = ()) -> bool:
    """Whether the innermost frame outside the standard library, this file and `skip` belongs to a trusted
    library."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == __file__ or (skip and any(part in filename for part in skip)):
            frame = frame.f_back
            continue
        # The innermost frame outside the standard library decides: a library that writes on the solution's
        # behalf through the standard library (io, shutil, tempfile) is still the library.
        if filename.startswith("<frozen importlib"):
            return True
        if filename.startswith("<") or (
            filename.startswith(sys.base_prefix) and "site-packages" not in filename
        ):
            # Frozen modules, and code generated at run time ("<string>": Triton's launch binder, dataclasses):
            # the real file that called into it decides. A solution hiding behind eval is still found below.
            frame = frame.f_back
            continue
        return any(marker in filename for marker in markers)
    return False


def _trusted_now(markers: tuple[str, ...], skip: tuple[str, ...] = ()) -> bool:
    """_caller_is_trusted from outside the audit hook: its own frame lookup must not trip the hook."""
    global _in_hook
    outer, _in_hook = _in_hook, True
    try:
        return _caller_is_trusted(markers, skip)
    finally:
        _in_hook = outer


def _trusted_where() -> str:
    """_where from the audit hook's raise path, without tripping the hook on its own frame lookup."""
    global _in_hook
    outer, _in_hook = _in_hook, True
    try:
        return _where()
    finally:
        _in_hook = outer


def _plain(value: Any) -> Any:
    """A path or mode as an exact str or bytes (ints and None as they are). The audit hook receives the caller's own
    object: a str subclass could answer its comparisons, `in` and startswith however it liked, and a path-like
    object could give another path each time it is asked, while the hook checks one and the call opens another."""
    if value is None or type(value) in (str, bytes, int):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return b"".join([value])
    if isinstance(value, int):
        return int.__index__(value)
    try:
        return _plain(os.fspath(value))
    except TypeError:
        return value


def _open_detail(args: tuple[Any, ...]) -> str | None:
    path, mode, flags = (list(args) + [None, None, None])[:3]
    path, mode = _plain(path), _plain(mode)
    if isinstance(path, int) or path is None:
        return None
    real = os.path.realpath(os.fsdecode(path))
    if _is_private(real):
        return _PRIVATE_DETAIL.format(path=real)
    # Another process's memory, environment or files, through /proc: the harness's parent holds secrets.
    parts = real.split(os.sep)
    if len(parts) > 2 and parts[1] == "proc":
        if parts[2].isdigit() and int(parts[2]) != _pid or parts[-1] in {"mem", "environ", "maps", "pagemap"}:
            return f"reading {real} looks into process memory or another process; remove it"
    writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
        isinstance(flags, int) and flags & _WRITE_FLAGS
    )
    if not writing or real == os.devnull or real.endswith(".pyc"):
        return None
    if real == _cwd or real.startswith(_cwd + os.sep):
        return None
    if _caller_is_trusted(_TRUSTED_WRITERS):
        return None
    return (
        f"writing {real} outside the evaluation's own directory; a solution may write only under its working "
        "directory (build caches, the evaluator's files and other evaluations are off limits)"
    )


_PRIVATE_DETAIL = (
    "reading {path} is not allowed: other evaluations' directories and the evaluator's caches hold other "
    "people's submissions; a solution may read only its own directory and installed software"
)


def _private_roots(cwd: str) -> list[str]:
    """Directories with other submissions in them: the sibling work directories and the evaluator's caches."""
    roots = []
    parent = os.path.dirname(cwd)
    # The core's layout: <cache>/work/<evaluation> or /dev/shm/kernelhub-work/<evaluation>.
    if os.path.basename(parent) in {"work", "kernelhub-work"}:
        roots.append(parent)
        if os.path.basename(parent) == "work":
            roots.append(os.path.dirname(parent))
    cache = config.setting("cache_dir")
    if cache is not None:
        roots.append(str(cache))
    try:
        import pwd

        roots.append(os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "kernelhub"))
    except (ImportError, KeyError):
        pass
    return [os.path.realpath(r) for r in roots]


def _is_private(real: str) -> bool:
    if real == _cwd or real.startswith(_cwd + os.sep):
        return False
    return any(real == root or real.startswith(root + os.sep) for root in _private_roots_cache)


def _program_name(args: tuple[Any, ...]) -> str:
    program = args[0] if args else "?"
    if isinstance(program, (list, tuple)) and program:
        program = program[0]
    return repr(os.fsdecode(program) if isinstance(program, (str, bytes)) else program)[:80]


def _is_linker_cache_query(event: str, args: tuple[Any, ...]) -> bool:
    """`ldconfig -p` (read-only: it lists the dynamic linker's cache), as ctypes.util.find_library runs it."""
    if event != "subprocess.Popen" or len(args) < 2 or not isinstance(args[1], (list, tuple)):
        return False
    # The list's own items, each an exact str or bytes (_plain): not what a subclass's iteration or comparison says.
    raw = args[1]
    items = list.copy(raw) if isinstance(raw, list) else list(tuple.__iter__(raw))
    argv = [os.fsdecode(a) if isinstance(a, (str, bytes)) else a for a in map(_plain, items)]
    return len(argv) == 2 and argv[1] == "-p" and isinstance(argv[0], str) and argv[0] in (
        "ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig", "/sbin/ldconfig.real")


def _where(limit: int = 3) -> str:
    """The innermost frames outside this file, for the finding's detail: users need to know what tripped it."""
    frame: FrameType | None = sys._getframe(2)
    places: list[str] = []
    while frame is not None and len(places) < limit:
        filename = frame.f_code.co_filename
        if filename != __file__:
            places.append(f"{os.path.basename(filename)}:{frame.f_lineno}")
        frame = frame.f_back
    return " <- ".join(places)


_LOGGING_FILE = os.path.join("logging", "__init__.py")
# Helpers that call sys._getframe only to read the caller's module name (typing's and typing_extensions'
# _caller, namedtuple, enum): they return a string, never the frame. Triton creates typing objects per launch.
_NAME_LOOKUP_FILES = ("typing_extensions.py", os.sep + "typing.py", os.path.join("collections", "__init__.py"),
                      os.sep + "enum.py")


def _module_name_lookup(event: str) -> bool:
    if event != "sys._getframe":
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.endswith(_NAME_LOOKUP_FILES)


def _logging_finds_caller(event: str) -> bool:
    """A log record emitted during forward (by torch, say): logging reads its caller's file and line through
    sys._getframe inside its own code and hands no frame out. Someone calling logging.currentframe() directly
    gets the frame, so the function that asked must itself be in logging."""
    if event != "sys._getframe":
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    # frame: logging.currentframe, the caller of sys._getframe; its caller must be logging too (findCaller).
    return (
        frame is not None and frame.f_code.co_filename.endswith(_LOGGING_FILE)
        and frame.f_back is not None and frame.f_back.f_code.co_filename.endswith(_LOGGING_FILE)
    )


def _is_frame_request(event: str, args: tuple[Any, ...]) -> bool:
    if event == "sys._getframe":
        return True
    return event == "object.__getattr__" and len(args) >= 2 and args[1] in _FRAME_ATTRS


def _frame_caller_trusted() -> bool:
    """Outside forward, who asked for a frame: the standard library, an installed package or the harness may
    (namedtuple, typing and logging do at import time); the solution itself may not. inspect and traceback
    only hand frames on to their caller, so their caller decides."""
    frame: FrameType | None = sys._getframe(1)
    generated = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == __file__ or filename.endswith((os.sep + "inspect.py", os.sep + "traceback.py")):
            frame = frame.f_back
            continue
        if filename.startswith("<frozen") or "site-packages" in filename or "dist-packages" in filename:
            return True
        if filename.startswith("<"):
            # Generated code (Triton's launch binder, dataclasses): an installed library that called into it
            # may; code generated by the solution, called from the solution or from the harness, may not.
            generated = True
            frame = frame.f_back
            continue
        return not generated and filename.startswith((sys.base_prefix, _HARNESS_DIR))
    return not generated


def _audit_hook(event: str, args: tuple[Any, ...]) -> None:
    global _in_hook
    if not _installed or _in_hook:
        return
    _in_hook = True
    try:
        detail = _AUDIT_ALWAYS.get(event)
        if detail is None and _in_forward:
            detail = _AUDIT_IN_FORWARD.get(event)
            if detail is None and event == "object.__getattr__" and len(args) >= 2 and args[1] in _FRAME_ATTRS:
                detail = f"reading .{args[1]} climbs into the harness's frames"
            # Triton compiles on the first call (ptxas in a subprocess), CuPy too: their own doing is fine.
            if detail is not None and (_caller_is_trusted(_TRUSTED_IN_FORWARD) or _logging_finds_caller(event)
                                       or _module_name_lookup(event)):
                detail = None
        if detail is None and not _in_forward and _is_frame_request(event, args) and not _frame_caller_trusted():
            detail = (
                "frame inspection from the solution (sys._getframe, inspect.currentframe, tracebacks' tb_frame, "
                "generators' gi_frame) reaches the harness's frames; remove it"
            )
        if (detail is None and event in _AUDIT_PROCESS and not _is_linker_cache_query(event, args)
                and not _caller_is_trusted(_TRUSTED_PROGRAM_STARTERS)):
            detail = f"starting a program ({_program_name(args)}) is not allowed: the evaluator builds extensions itself"
        if detail is None and event == "open":
            detail = _open_detail(args)
        if detail is None and event in {"os.listdir", "os.scandir", "glob.glob"} and args:
            target = _plain(args[0]) if args[0] is not None else "."
            # The guard's own thread listing (_native_threads, twice a call) is no private directory: resolving
            # it cost some 40 us each time in the solution's process only, which the clock audit's null call
            # (no hook installed) does not pay. (An exact str: _plain above.)
            if (not isinstance(target, int) and target != _TASKS_DIR
                    and _is_private(os.path.realpath(os.fsdecode(target)))):
                detail = _PRIVATE_DETAIL.format(path=os.path.realpath(os.fsdecode(target)))
    finally:
        _in_hook = False
    if detail is not None:
        raise _violation("forbidden_call", f"{event}: {detail} (at {_trusted_where()})")


class _BlockTorchCompute(TorchDispatchMode):
    """Raises on every aten op that computes, unless the problem allows it.

    Sees the ops a C++ extension calls through the dispatcher too (torch::matmul in a load_inline source),
    because the dispatch mode is thread state, not a Python-level wrapper.
    """

    def __init__(self, allowed: frozenset[str]) -> None:
        super().__init__()
        self.allowed = allowed
        self.library_ops: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        name = func._schema.name
        if name not in self.allowed and f"{name}.{func._overloadname}" not in self.allowed:
            # Triton's autotuner times its candidates with torch (torch.quantile, mean): its own doing.
            if not _trusted_now(_TRUSTED_IN_FORWARD, skip=_TORCH_DIR):
                raise _violation("torch_fallback", _fallback_detail(name))
            self.library_ops.add(name)
        return func(*args, **(kwargs or {}))


# Ways a host tensor's data is handed to another array library (numpy, and through it scipy, BLAS), where the
# op guard cannot see the work: blocked during forward. (CUDA tensors stay allowed: CuPy kernels take them.)
_HOST_EXPORTS: list[tuple[str, str]] = [
    ("torch.Tensor", "numpy"), ("torch.Tensor", "__array__"), ("torch.Tensor", "__dlpack__"),
    ("torch", "to_dlpack"), ("torch.utils.dlpack", "to_dlpack"), ("torch._C", "_to_dlpack"), ("torch.Tensor", "tolist"),
]
# tolist() of a few values (lengths, shapes) is honest; of a whole operand it is data leaving for numpy or Python.
_TOLIST_MAX = 4096


def _guard_host_export(name: str, function: Any) -> Any:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if (_in_forward and args and isinstance(args[0], torch.Tensor) and args[0].device.type == "cpu"
                and not (name.endswith("tolist") and args[0].numel() <= _TOLIST_MAX)
                and not _trusted_now(_TRUSTED_IN_FORWARD, skip=_TORCH_DIR)):
            raise _violation(
                "library_fallback",
                f"the forward handed a tensor to another array library ({name}); numpy, scipy and BLAS doing the "
                "work are fallbacks like torch's own ops: compute in your own kernel",
            )
        return function(*args, **kwargs)

    guarded.__name__ = getattr(function, "__name__", name.rsplit(".", 1)[-1])
    guarded.__doc__ = getattr(function, "__doc__", None)
    return guarded


def _install_host_export_guards() -> None:
    import torch.utils.dlpack  # noqa: F401  (so that its to_dlpack is there to wrap)

    for owner, attr in _HOST_EXPORTS:
        holder = _resolve(owner)
        function = _lookup(holder, attr) if holder is not None else _MISSING
        if function is not _MISSING and callable(function):
            setattr(holder, attr, _guard_host_export(f"{owner}.{attr}", function))


# CuPy's library routines (issue 2): its array functions, ufuncs, reductions, linalg/fft/random, cupyx.scipy and its
# cuBLAS/cuFFT/... bindings doing the work are a fallback like torch's own ops; its kernels (RawKernel, RawModule,
# ElementwiseKernel, ReductionKernel) and the glue around them (anticheat.CUPY_GLUE) are not. The solution imports
# CuPy after install, so its modules are guarded as they are imported: `from cupy import matmul` gets the guarded one.
_CUPY_NAMESPACES = ("cupy", "cupyx")
# Modules every public routine of which is a library routine, and the vendor bindings (anticheat's list). CuPy's
# own accelerators (cupy.cuda.cub, cupy.cuda.thrust) are left to the static rules: CuPy's compiled code may reach
# them through the module on behalf of what it was asked to do, where no Python frame says who asked.
_CUPY_LIBRARY_PACKAGES = (
    "cupy.linalg", "cupy.fft", "cupy.random", "cupy.polynomial", "cupy.sparse", "cupyx.scipy", "cupyx.linalg",
    "cupyx.signal", "cupyx.cusolver", "cupyx.cusparse", "cupyx.cutensor", "cupyx.cudnn", "cupyx.lapack",
    "cupyx.fallback_mode",
) + tuple(m for m in CUPY_LIBRARY_MODULES if "get_cublas_handle" not in m and m not in {"cupy.cuda.cub",
                                                                                        "cupy.cuda.thrust"})
# cupy.ndarray methods that compute: the operators (`a @ b` is cupy.matmul), numpy's dispatch to CuPy
# (`numpy.exp(a)`), reductions and sorts. `get`/`tolist` copy to the host, where numpy would do the work.
_CUPY_ARRAY_OPERATORS = tuple(
    f"__{prefix}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or",
                                   "xor", "lshift", "rshift", "divmod") for prefix in ("", "r", "i")
) + ("__neg__", "__pos__", "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
     "__array_ufunc__", "__array_function__")
_CUPY_HOST_COPIES = ("cupy.asnumpy", "cupy.ndarray.get", "cupy.ndarray.tolist")
_library_wrapped: list[tuple[Any, str, Any, str]] = []  # (module or class, attribute, its guard, label)
_library_guards: set[int] = set()  # ids of the guards, so that nothing is wrapped twice
_library_modules: set[int] = set()  # ids of the modules guarded


def _cupy_module_kind(name: str) -> str | None:
    """"namespace" for cupy and cupyx (guarded less their glue), "library" for a module of library routines."""
    if name in _CUPY_NAMESPACES:
        return "namespace"
    if any(part.startswith("_") for part in name.split(".")):
        return None
    if any(name == m or name.startswith(m + ".") for m in _CUPY_LIBRARY_PACKAGES):
        return "library"
    return None


def _library_call(label: str, args: tuple) -> None:
    """A library routine was called in forward: a finding unless a trusted library (CuPy itself, serving a
    routine the solution was allowed to call; Triton) made the call, or it copies a few values to the host."""
    if _trusted_now(_TRUSTED_IN_FORWARD):
        return
    if label in _CUPY_HOST_COPIES:
        size = getattr(args[0], "size", None) if args else None
        if isinstance(size, int) and size <= _TOLIST_MAX:
            return
        raise _violation("library_fallback", f"the forward copied a CuPy array of {size} values to the host ({label}), "
                         f"where numpy would do the work; {CUPY_ADVICE}")
    raise _violation("library_fallback", f"the forward called {label}, a library routine; {CUPY_ADVICE}")


class _GuardedRoutine:
    """Stands in for a callable library object that is not a function (a CuPy ufunc such as cupy.exp): calls are
    guarded, attributes are the routine's, and its methods (cupy.add.reduce) are guarded too."""

    def __init__(self, label: str, routine: Any) -> None:
        self._label = label
        self._routine = routine
        self.__name__ = getattr(routine, "__name__", label.rsplit(".", 1)[-1])
        self.__doc__ = getattr(routine, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _in_forward:
            _library_call(self._label, args)
        return self._routine(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._routine, name)
        if callable(value) and not isinstance(value, type) and not name.startswith("_"):
            return _guard_routine(f"{self._label}.{name}", value)
        return value

    def __repr__(self) -> str:
        return repr(self._routine)


def _guard_routine(label: str, routine: Any) -> Any:
    if not (isinstance(routine, (types.FunctionType, types.BuiltinFunctionType))
            or type(routine).__name__ in {"cython_function_or_method", "fused_cython_function"}):
        return _GuardedRoutine(label, routine)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _in_forward:
            _library_call(label, args)
        return routine(*args, **kwargs)

    guarded.__name__ = getattr(routine, "__name__", label.rsplit(".", 1)[-1])
    guarded.__qualname__ = getattr(routine, "__qualname__", guarded.__name__)
    guarded.__doc__ = getattr(routine, "__doc__", None)
    guarded.__module__ = str(getattr(routine, "__module__", None) or "")
    return guarded


def _guard_library_module(module: types.ModuleType, glue: frozenset[str] = frozenset()) -> None:
    """Replace the module's public routines (functions and callable objects; not classes, submodules, the names in
    `glue`, nor numpy's dtype helpers that CuPy re-exports) with guarded ones."""
    label = module.__name__
    for name, obj in list(vars(module).items()):
        if (name.startswith("_") or name in glue or isinstance(obj, (type, types.ModuleType)) or not callable(obj)
                or id(obj) in _library_guards):
            continue
        owner = str(getattr(obj, "__module__", None) or "").split(".")[0]
        if owner == "numpy" and label.split(".")[0] != "numpy":
            continue  # CuPy re-exports numpy's dtype helpers (promote_types, issubdtype): they take no arrays
        _set_guard(module, name, _guard_routine(f"{label}.{name}", obj), f"{label}.{name}")


def _guard_library_methods(cls: type, names: tuple[str, ...], label: str) -> None:
    """Replace methods of a library's array class with guarded ones, where the class allows it (CuPy's ndarray is
    a Python class over a C base; a C class itself cannot be changed and its methods stay unguarded)."""
    for name in names:
        original = _lookup(cls, name)
        if original is _MISSING or not callable(original) or id(original) in _library_guards:
            continue
        try:
            _set_guard(cls, name, _guard_method(f"{label}.{name}", original), f"{label}.{name}")
        except (TypeError, AttributeError):
            return


def _guard_method(label: str, original: Any) -> Any:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _in_forward:
            _library_call(label, (self,))
        return original(self, *args, **kwargs)

    guarded.__name__ = label.rsplit(".", 1)[-1]
    return guarded


def _set_guard(holder: Any, name: str, guard: Any, label: str) -> None:
    setattr(holder, name, guard)
    _library_guards.add(id(guard))
    _library_wrapped.append((holder, name, guard, label))


def _guard_cupy_module(module: types.ModuleType) -> None:
    kind = _cupy_module_kind(getattr(module, "__name__", ""))
    if kind is not None:
        _library_modules.add(id(module))
    if kind == "library":
        _guard_library_module(module)
    elif kind == "namespace":
        _guard_library_module(module, glue=CUPY_GLUE)
        if module.__name__ == "cupy":
            if callable(getattr(module, "asnumpy", None)) and id(module.asnumpy) not in _library_guards:
                _set_guard(module, "asnumpy", _guard_routine("cupy.asnumpy", module.asnumpy), "cupy.asnumpy")
            if isinstance(getattr(module, "ndarray", None), type):
                _guard_library_methods(module.ndarray, _CUPY_ARRAY_OPERATORS + tuple(sorted(CUPY_ARRAY_COMPUTE_METHODS))
                                       + ("get", "tolist"), "cupy.ndarray")


class _GuardOnImport:
    """A meta path finder that lets the usual finders find a module and, once the module has run, guards it:
    names a solution takes at import (`from cupy import matmul`) are then the guarded ones."""

    def __init__(self, kind: Any, guard: Any) -> None:
        self.kind = kind
        self.guard = guard

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if self.kind(fullname) is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None or isinstance(loader, type):
            return spec

        def exec_and_guard(module: types.ModuleType) -> None:
            exec_module(module)
            self.guard(module)

        try:
            loader.exec_module = exec_and_guard
        except AttributeError:
            pass
        return spec


def _install_library_guards() -> None:
    for name in sorted(sys.modules):
        if _cupy_module_kind(name) is not None:
            _guard_cupy_module(sys.modules[name])
    sys.meta_path.insert(0, _GuardOnImport(_cupy_module_kind, _guard_cupy_module))


def _late_library_guards() -> None:
    """Guards a CuPy namespace that reached sys.modules without the import guard seeing it run. On the H200
    (2026-11-30) an honest CuPy solution's cupyx got there that way, through CuPy's own imports, so this is not
    taken as tampering; names bound from such a module before it is guarded stay unguarded, and the static
    rules name every CuPy library import (docs/ANTICHEAT.md)."""
    for name in _CUPY_NAMESPACES:
        module = sys.modules.get(name)
        if module is not None and id(module) not in _library_modules:
            _guard_cupy_module(module)


def _check_library_guards() -> None:
    _late_library_guards()
    for holder, name, guard, label in _library_wrapped:
        if _lookup(holder, name) is not guard:
            _add("harness_patched", f"{label} was replaced or removed; the evaluator guards library routines: "
                 "remove the assignment")


def _fallback_detail(op: str) -> str:
    return (
        f"the forward ran the torch op {op}; a solution must compute in its own kernel (torch.nn.functional, "
        "tensor methods, torch.ops.aten, torch.compile, torch calls from C++ and the reference Model are torch "
        "fallbacks, not allowed for this problem)"
    )


_fallthrough_library: Any = None
_fallthrough_failed: list[str] = []


def _let_allowed_ops_through() -> None:
    """The op guard's dispatch mode sees only the ops it must refuse. Every overload of ALLOWED_ATEN_OPS gets a
    fallthrough at the Python dispatch key, so allocations, views and copies in forward skip the mode's Python
    code (some 10 us an op, inside the timed window: on the H200 host the guard had added 40-100 us to calls of
    a one-kernel forward); an op that computes still reaches the mode and is refused. Only in the solution's
    process: a Python mode elsewhere (torch.compile's tracing in a trusted child) must see every op."""
    global _fallthrough_library
    if _fallthrough_library is not None:
        return
    library = torch.library.Library("aten", "IMPL")
    for full in sorted(ALLOWED_ATEN_OPS):
        op = full.split("::", 1)[1]
        packet = getattr(torch.ops.aten, op, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            name = op if overload == "default" else f"{op}.{overload}"
            try:
                library.impl(name, torch.library.fallthrough_kernel, "Python")
            except Exception as exc:  # noqa: BLE001 - that overload stays checked by the mode: slower, not weaker
                _fallthrough_failed.append(f"{name}: {type(exc).__name__}")
    _fallthrough_library = library


def install_process_guards() -> None:
    """Record the identities the harness relies on and the threads alive now; block introspection.

    Called once in the child, after the harness captured its own references, before the solution is
    imported. Calling it again does nothing.
    """
    global _installed, _watched, _precision, _baseline_threads, _cwd, _pid
    if _installed:
        return
    import json  # noqa: F401  (imported so that its functions are watched: the harness reports with them)
    import math  # noqa: F401
    import socket  # noqa: F401
    import statistics  # noqa: F401

    # Entering a dispatch mode imports torch._dynamo lazily, which also wraps a few torch functions, and
    # the first profiler use initialises it: do both now, before the identities are recorded and before
    # the solution can interfere.
    _let_allowed_ops_through()
    with _BlockTorchCompute(ALLOWED_ATEN_OPS):
        torch.empty(1)
    try:
        with torch.autograd.profiler.profile(use_kineto=False):
            torch.empty(1)
    except Exception as exc:  # noqa: BLE001 - the dispatch mode still guards; say why the record is off
        _profiler_failed.append(f"{type(exc).__name__}: {exc}")
    _install_host_export_guards()
    _install_library_guards()
    _watched = _snapshot_watched()
    for name, read in _PRECISION_SETTINGS.items():
        try:
            _precision[name] = read()
        except Exception:  # noqa: BLE001 - a setting this torch build lacks is simply not watched
            pass
    _baseline_threads = _python_threads()
    _cwd = os.path.realpath(os.getcwd())
    _pid = os.getpid()
    _private_roots_cache[:] = _private_roots(_cwd)
    _thread.start_new_thread = _guarded_start_new_thread
    threading._start_new_thread = _guarded_start_new_thread  # type: ignore[attr-defined]
    sys.addaudithook(_audit_hook)
    _installed = True
    own = {name: obj for name, obj in globals().items() if callable(obj) and not isinstance(obj, type)}
    own["_findings"] = _findings
    own["_watched"] = _watched
    integrity_report.__kwdefaults__ = {"_own": own}


def _allowed_ops(policy: dict) -> frozenset[str]:
    names = set()
    for name in policy.get("allow_torch") or []:
        name = str(name)
        names.add(name if "::" in name else f"aten::{name}")
    return ALLOWED_ATEN_OPS | names


@contextlib.contextmanager
def forward_guard(policy: dict) -> Iterator[None]:
    """Wrap one call of the solution's forward.

    policy keys, all optional:
    - "allow_torch": aten op names the problem allows ("aten::mm" or "aten::mm.default"; "mm" means aten::mm);
    - "block_torch" (default True): torch compute ops raise GuardViolation and are recorded;
    - "record_ops" (True, False, or by default "sampled"): also list every op run through torch's profiler
      hooks, which see ops a C++ extension calls with the Python dispatch key excluded. It costs tens of
      microseconds inside the call (and about 1 ms around it), so by default it records the first
      RECORD_FIRST_CALLS calls (trials, warm-up) and then a random one in RECORD_ONE_IN, which a solution
      cannot predict;
    - "check_stream" (default True): on CUDA, the current stream after the call must be the default stream.
    """
    global _in_forward, _forward_calls, _last_recorded
    allowed = _allowed_ops(policy)
    _late_library_guards()
    native_before = _native_threads()
    block = policy.get("block_torch", True)
    record_ops = policy.get("record_ops", "sampled")
    if record_ops == "sampled":
        record_ops = _forward_calls < RECORD_FIRST_CALLS or _sampler.randrange(RECORD_ONE_IN) == 0
    record = bool(record_ops) and block
    mode = _BlockTorchCompute(allowed) if block else None
    stack_depth = torch._C._len_torch_dispatch_stack()
    profiler = torch.autograd.profiler.profile(use_kineto=False) if record and not _profiler_failed else None
    _last_recorded = profiler is not None
    # On calls the record skips, ITT ranges (a few microseconds per op) keep RecordFunction callbacks installed
    # too: native code that asks whether any are (to run torch ops only when nobody records) gets the same
    # answer on every call.
    # (policy "itt_decoy": False where the harness itself profiles the call, child.op_profile: its profiler keeps
    # RecordFunction callbacks installed just the same, and two profilers cannot run on one thread.)
    decoy = (torch.autograd.profiler.emit_itt()
             if profiler is None and block and policy.get("itt_decoy", True) and _itt_decoy_ok() else None)
    try:
        with contextlib.ExitStack() as stack:
            if profiler is not None:
                stack.enter_context(profiler)
            if decoy is not None:
                try:
                    stack.enter_context(decoy)
                except Exception as exc:  # noqa: BLE001 - the record's sampling is then visible; say why
                    _itt_failed.append(f"{type(exc).__name__}: {exc}")
            if mode is not None:
                stack.enter_context(mode)
            _in_forward += 1
            try:
                yield
            finally:
                _in_forward -= 1
                if mode is not None and (
                    _get_current_dispatch_mode() is not mode
                    or torch._C._len_torch_dispatch_stack() != stack_depth + 1
                ):
                    _add(
                        "guard_tampered",
                        "the forward changed torch's dispatch mode stack (the evaluator's op guard); remove the "
                        "code that pushes or pops dispatch modes",
                    )
    finally:
        # Also when the forward raised: a solution that catches nothing still gets its findings recorded.
        if profiler is not None:
            _check_profiled_ops(profiler, allowed | (mode.library_ops if mode is not None else set()))
        _forward_calls += 1
        _after_forward(policy, native_before)


def last_call_recorded() -> bool:
    """Whether the op record ran on the latest forward_guard call (its host time is not a plain call's)."""
    return _last_recorded


def _itt_decoy_ok() -> bool:
    if _itt_failed:
        return False
    try:
        return bool(torch.profiler.itt.is_available())
    except Exception as exc:  # noqa: BLE001 - a build without ITT: the sampling stays visible to native code
        _itt_failed.append(f"{type(exc).__name__}: {exc}")
        return False


def _check_profiled_ops(profiler: Any, allowed: frozenset[str]) -> None:
    # The profiler names ops without their overload: an allowed overload allows the op here.
    allowed_names = {name.split(".")[0] for name in allowed}
    try:
        events = profiler.function_events
    except Exception:  # noqa: BLE001 - a profiler someone stopped from inside gives no events
        _add("guard_tampered", "the evaluator's op recorder was stopped during forward; do not touch torch's profiler")
        return
    for event in events:
        # Only the ops the forward called itself: an allowed op's own sub-ops are torch's business.
        parent = event.cpu_parent
        if parent is not None and parent.name.startswith("aten::"):
            continue
        if event.name.startswith("aten::") and event.name not in allowed_names:
            _add("torch_fallback", _fallback_detail(event.name))


def _after_forward(policy: dict, native_before: set[int]) -> None:
    _check_watched()
    new_py = _python_threads() - _baseline_threads
    alive = sorted(t.name for t in threading.enumerate() if t.ident in new_py and t.is_alive())
    if alive:
        _add(
            "background_thread",
            f"threads started by the solution are still running after forward returned ({', '.join(alive)}); "
            "all work must finish inside forward",
        )
    # Native thread pools (OpenMP, torch's intra-op pool, the CUDA driver) start on first use, possibly in the
    # first call; after it, a native thread that a call started and left running is work escaping forward.
    # Threads the harness starts between calls are not the solution's, so only growth within a call counts.
    new_native = _native_threads() - native_before
    if _forward_calls > 1 and new_native:
        _add(
            "background_thread",
            f"{len(new_native)} native thread(s) were started by a forward call after the first and are still "
            "running; start no threads that outlive forward",
        )
    if policy.get("check_stream", True) and torch.cuda.is_available() and torch.cuda.is_initialized():
        if torch.cuda.current_stream() != torch.cuda.default_stream():
            _add(
                "stream_switch",
                "forward returned with a non-default CUDA stream current; launch on the current stream "
                "(torch.cuda.current_stream()) and leave it current",
            )
    if sys.gettrace() is not None or sys.getprofile() is not None:
        _add("tracer_installed", "a trace or profile function was installed; remove it")


def integrity_report(*, _own: dict | None = None) -> list[dict]:
    """Findings gathered so far, after a last check of the watched identities and threads.

    `_own` is set at install time (never pass it): this module's functions and state as they were then, held
    by this function object so that a solution that replaced them through the module is caught by a harness
    that kept its own reference to this function.
    """
    if _own is not None:
        module = sys.modules.get(__name__)
        current = vars(module) if module is not None else {}
        changed = sorted(name for name, obj in _own.items() if current.get(name) is not obj)
        if changed:
            _own["_findings"].append({
                "rule": "guard_tampered",
                "detail": f"the evaluator's guards were replaced ({', '.join(changed)}); do not touch gpu_runner",
            })
    if _installed:
        _check_watched()
        new_py = _python_threads() - _baseline_threads
        alive = sorted(t.name for t in threading.enumerate() if t.ident in new_py and t.is_alive())
        if alive:
            _add(
                "background_thread",
                f"threads started by the solution are still running at the end ({', '.join(alive)}); "
                "all work must finish inside forward",
            )
    findings = _own["_findings"] if _own is not None else _findings
    return [dict(f) for f in findings]
