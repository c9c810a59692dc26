"""Building C++/CUDA extensions for the child, with trusted code, into a shared cache.

The child never builds: its `load_inline`/`load` send a build request to the parent (see child.py). The
parent validates it, looks the key up in KERNELHUB_CACHE_DIR/builds/<key>/, and on a miss runs
`python -m gpu_runner.builds` in a sandbox of its own (only the compiler and torch's builder run there, no
solution Python code), then copies the finished library into the cache. The child gets a private copy of
the library in its own directory and imports it from there, so it can neither read nor write the cache.

The key covers every build argument plus the torch version, the compilers and the device architecture, so
a library is reused only for exactly the same build; the second build of a kernel is instant, across
processes (a lock file serialises concurrent builds of one key).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpu_runner import config, sandbox
from gpu_runner.protocol import ChannelClosed, ChannelTimeout, ProtocolError

BUILD_FORMAT = 1
MAX_REQUEST_BYTES = 4 << 20
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_LIST_FIELDS = ("cpp_sources", "cuda_sources", "extra_cflags", "extra_cuda_cflags", "extra_ldflags",
                "extra_include_paths")


class BuildRequestError(ValueError):
    """A malformed build request: the message says which argument to fix."""


@dataclass
class BuildResult:
    ok: bool
    library: Path | None
    message: str
    cached: bool
    seconds: float
    key: str


def validate_request(raw: Any) -> dict[str, Any]:
    """Normalise what the child sent into a canonical, JSON-safe request."""
    if not isinstance(raw, dict):
        raise BuildRequestError("build request must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise BuildRequestError("the extension name must be a Python identifier of at most 64 characters")
    req: dict[str, Any] = {"name": name}
    for key in _LIST_FIELDS:
        value = raw.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BuildRequestError(f"{key} must be a string or a list of strings")
        req[key] = value
    functions = raw.get("functions")
    if isinstance(functions, str):
        functions = [functions]
    if functions is not None:
        if isinstance(functions, list) and all(isinstance(f, str) and _NAME.match(f) for f in functions):
            pass
        elif isinstance(functions, dict) and all(isinstance(k, str) and _NAME.match(k) and isinstance(v, str)
                                                 for k, v in functions.items()):
            functions = dict(sorted(functions.items()))
        else:
            raise BuildRequestError("functions must be a list of identifiers or a dict of identifier -> docstring")
    req["functions"] = functions
    files = raw.get("files") or {}
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and re.match(r"^[A-Za-z0-9_.-]{1,128}$", k) and not k.startswith(".") and isinstance(v, str)
        for k, v in files.items()
    ):
        raise BuildRequestError("source files must be plain file names with text content")
    req["files"] = dict(sorted(files.items()))
    tree = raw.get("tree")
    if tree is not None:
        _validate_tree(raw, req)
    with_cuda = raw.get("with_cuda")
    if with_cuda is not None and not isinstance(with_cuda, bool):
        raise BuildRequestError("with_cuda must be true, false or null")
    if with_cuda is None:
        with_cuda = bool(req["cuda_sources"]) or any(f.endswith((".cu", ".cuh")) for f in req["files"]) or \
            any(f.endswith(".cu") for f in req.get("sources", []))
    req["with_cuda"] = with_cuda
    req["is_python_module"] = bool(raw.get("is_python_module", True))
    req["kind"] = "workdir" if "tree" in req else "files" if req["files"] else "inline"
    if req["kind"] == "inline" and not req["cpp_sources"] and not req["cuda_sources"]:
        raise BuildRequestError("load_inline needs cpp_sources or cuda_sources")
    if len(json.dumps(req)) > MAX_REQUEST_BYTES:
        raise BuildRequestError(f"the sources are over {MAX_REQUEST_BYTES >> 20} MiB")
    return req


def _validate_tree(raw: dict[str, Any], req: dict[str, Any]) -> None:
    """A CUDA Agent workdir's native files in their folders (gpu_runner/workdir.py), and which of them to compile."""
    from gpu_runner.workdir import NATIVE_SUFFIXES, WorkdirError, _check_path

    tree, sources = raw.get("tree"), raw.get("sources")
    if not isinstance(tree, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tree.items()):
        raise BuildRequestError("tree must map relative paths to source text")
    try:
        for path in tree:
            if _check_path(path) != path or not path.endswith(NATIVE_SUFFIXES):
                raise BuildRequestError(f"{path!r}: not a plain relative path of a C++/CUDA source or header")
    except WorkdirError as e:
        raise BuildRequestError(str(e)) from None
    if not isinstance(sources, list) or not sources or not all(isinstance(s, str) and s in tree for s in sources):
        raise BuildRequestError("sources must list the tree's files to compile")
    req["tree"] = dict(sorted(tree.items()))
    req["sources"] = sorted(set(sources))


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
        return out.strip().splitlines()[0] if out.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "missing"


@cache
def toolchain(with_cuda: bool) -> dict[str, str]:
    """Versions that change what a build produces (also reported in results)."""
    import torch

    info = {"torch": torch.__version__, "python": sys.version.split()[0],
            "cxx": _first_line([os.environ.get("CXX", "c++"), "--version"])}
    if with_cuda:
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        lines = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines() \
            if os.path.exists(nvcc) else []
        info["nvcc"] = lines[-1] if lines else "missing"
        info["arch"] = cuda_arch_list()
    return info


@cache
def cuda_arch_list() -> str:
    """TORCH_CUDA_ARCH_LIST for the visible GPU, read through NVML so the parent makes no CUDA context."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return os.environ["TORCH_CUDA_ARCH_LIST"]
    from gpu_runner import sysinfo

    cap = sysinfo.compute_capability()
    return f"{cap[0]}.{cap[1]}" if cap else ""


def build_key(req: dict[str, Any]) -> str:
    blob = json.dumps({"format": BUILD_FORMAT, "request": req, "toolchain": toolchain(req["with_cuda"])},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def builds_dir() -> Path:
    path = sandbox.cache_dir() / "builds"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _ensure_pch() -> None:
    """Build torch's precompiled extension.h once, with trusted default flags (use_pch needs it in place).

    The sandboxed builder cannot write torch's install directory; gcc picks the .gch up by itself for
    builds whose flags are compatible, and ignores it for the others. The lock is host-wide, since every
    cache directory on the host shares the one torch install.
    """
    marker = builds_dir() / f"pch-{toolchain(False)['torch']}.done"
    if marker.exists():
        return
    with open(Path(tempfile.gettempdir()) / "kernelhub-pch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        code = ("import torch.utils.cpp_extension as c; "
                "c._check_and_build_extension_h_precompiler_headers(None, None)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            marker.write_text("ok\n")
        else:
            print(f"kernelhub: precompiled header not built: {done.stderr[-500:]}", file=sys.stderr)


def trim_compiler_output(text: str, limit: int = 4000) -> str:
    """The part of a compiler log that says what is wrong: the error lines with a little context."""
    lines = text.splitlines()
    keep: list[int] = []
    for i, line in enumerate(lines):
        if re.search(r"\berror\b|Error|undefined reference|fatal", line):
            keep.extend(range(max(0, i - 2), min(len(lines), i + 4)))
    chosen = [lines[i] for i in dict.fromkeys(keep)] if keep else lines[-40:]
    text = "\n".join(chosen)
    return text if len(text) <= limit else text[:limit] + "\n... (trimmed)"


def build(req: dict[str, Any], *, device: str, on_build_start: Any = None,
          timeout_s: float | None = None) -> BuildResult:
    """Return the cached library for req, building it in a sandbox on a miss, for at most timeout_s seconds
    (KERNELHUB_BUILD_TIMEOUT_S, config.py, where the caller passes none)."""
    start = time.monotonic()
    limit = float(config.setting("build_timeout_s")) if timeout_s is None else timeout_s
    key = build_key(req)
    root = builds_dir()
    entry = root / key
    meta_path = entry / "meta.json"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            library = entry / meta["library"] if meta["ok"] else None
            return BuildResult(meta["ok"], library, meta["message"], True, time.monotonic() - start, key)
        if on_build_start:
            on_build_start()
        if not req["with_cuda"]:
            _ensure_pch()
        ok, message, built = _build_in_sandbox(req, device=device, timeout_s=limit)
        # Timeouts and builder crashes are not cached: they may be the host's fault.
        if built is None and not ok and message.startswith("the build "):
            return BuildResult(False, None, message, False, time.monotonic() - start, key)
        staging = root / f"{key}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        meta = {"ok": ok, "message": message, "library": None, "name": req["name"], "toolchain": toolchain(req["with_cuda"])}
        if built is not None:
            shutil.copyfile(built, staging / built.name)
            meta["library"] = built.name
        (staging / "meta.json").write_text(json.dumps(meta))
        os.replace(staging, entry)
        shutil.rmtree(built.parent.parent if built else Path("/nonexistent"), ignore_errors=True)
        library = entry / meta["library"] if meta["library"] else None
        return BuildResult(ok, library, message, False, time.monotonic() - start, key)


def _build_in_sandbox(req: dict[str, Any], *, device: str, timeout_s: float) -> tuple[bool, str, Path | None]:
    workdir = sandbox.new_workdir("build-")
    (workdir / "request.json").write_text(json.dumps(req))
    extra = {}
    if req["with_cuda"] and cuda_arch_list():
        extra["TORCH_CUDA_ARCH_LIST"] = cuda_arch_list()
    extra["MAX_JOBS"] = str(os.cpu_count() or 1)
    limits = sandbox.Limits(wall_s=timeout_s, cpu_s=int(timeout_s * (os.cpu_count() or 1)) + 60,
                            memory_bytes=None)
    child = sandbox.spawn(["-m", "gpu_runner.builds"], workdir=workdir, limits=limits, extra_env=extra)
    try:
        reply = child.channel.recv(deadline=time.monotonic() + timeout_s)
    except ChannelTimeout:
        sandbox.kill(child)
        return False, f"the build took longer than {timeout_s:.0f} s and was stopped", None
    except (ChannelClosed, ProtocolError):
        tail = child.log_tail()
        sandbox.kill(child)
        return False, f"the build process failed ({child.exit_description()}):\n{trim_compiler_output(tail)}", None
    ok = bool(reply.get("ok"))
    message = str(reply.get("message", ""))[:8000]
    built = None
    if ok:
        candidate = workdir / "build" / f"{req['name']}.so"
        if candidate.is_file() and not candidate.is_symlink():
            keep = sandbox.new_workdir("built-") / "lib"
            keep.mkdir()
            built = keep / candidate.name
            shutil.copyfile(candidate, built)
        else:
            ok, message = False, "the build reported success but produced no library"
    sandbox.kill(child)
    return ok, message, built


def _builder_main(fd: int) -> None:
    """In the build sandbox: compile the request in ./build with torch's own builder."""
    import socket

    from gpu_runner.protocol import Channel

    channel = Channel(socket.socket(fileno=fd))
    if os.environ.get("KERNELHUB_LOCKDOWN"):
        sandbox.lockdown(os.environ["KERNELHUB_LOCKDOWN"])
    req = json.loads(Path("request.json").read_text())
    import torch.utils.cpp_extension as cpp

    # The precompiled header is built by the parent; here torch must neither rebuild nor delete it.
    cpp._check_and_build_extension_h_precompiler_headers = lambda *a, **k: None
    cpp.remove_extension_h_precompiler_headers = lambda *a, **k: None
    build_dir = Path("build").resolve()
    build_dir.mkdir()
    common = dict(
        extra_cflags=req["extra_cflags"] or None, extra_cuda_cflags=req["extra_cuda_cflags"] or None,
        extra_ldflags=req["extra_ldflags"] or None, extra_include_paths=req["extra_include_paths"] or None,
        build_directory=str(build_dir), verbose=False, with_cuda=req["with_cuda"],
        is_python_module=req["is_python_module"],
    )
    # Building ends with torch importing the library; stop right after the link instead, so no code from
    # the library runs here: the child is the one that loads it.
    cpp._import_module_from_library = lambda *a, **k: None
    import torch

    torch.ops.load_library = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        if req["kind"] == "inline":
            cpp.load_inline(req["name"], req["cpp_sources"], cuda_sources=req["cuda_sources"] or None,
                            functions=req["functions"], use_pch=not req["with_cuda"], **common)
        elif req["kind"] == "workdir":
            # CUDA Agent's layout, folders kept (kernels/x_binding.cpp includes "../binding_registry.h"); every
            # listed source compiled into one extension, as its utils/compile.py does.
            src_dir = Path("src").resolve()
            for rel, text in req["tree"].items():
                (src_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                (src_dir / rel).write_text(text)
            try:
                cpp.load(req["name"], [str(src_dir / rel) for rel in req["sources"]], **common)
            except Exception as e:  # noqa: BLE001 - reported per file, the compiler's own lines
                from gpu_runner.workdir import trim_errors_per_file

                per_file = trim_errors_per_file(str(e), str(src_dir))
                channel.send({"ok": False, "message": per_file or trim_compiler_output(str(e))})
                return
        else:
            src_dir = Path("src").resolve()
            src_dir.mkdir()
            paths = []
            for fname, text in req["files"].items():
                (src_dir / fname).write_text(text)
                if fname.endswith((".cpp", ".cc", ".cxx", ".c", ".cu")):
                    paths.append(str(src_dir / fname))
            cpp.load(req["name"], paths, **common)
        channel.send({"ok": True, "message": ""})
    except Exception as e:  # noqa: BLE001 - the compiler's complaint goes back as the verdict's message
        channel.send({"ok": False, "message": trim_compiler_output(str(e))})


if __name__ == "__main__":
    _builder_main(int(sys.argv[1]))
