"""CUDA Agent's work directory as a submission: reading it safely, its text form, its build and its rules.

CUDA Agent (github.com/BytedTsinghua-SIA/CUDA-Agent) does not write KernelBench's single file. It leaves a
directory:

    model.py              the problem (KernelBench format), as the agent was given it
    model_new.py          class ModelNew, which does `import cuda_extension` and calls the registered functions
    binding.cpp           fixed: PYBIND11_MODULE(cuda_extension, m) applying every registered binding
    binding_registry.h    fixed: the registry and REGISTER_BINDING(name, fn)
    kernels/*.cu          the kernels; kernels/*_binding.cpp register them; optional kernels/*.cpp
    utils/...             the agent's own compile, check and profile scripts (kept, never run here)

and builds every .cu and .cpp of the root and kernels/ into one extension named cuda_extension
(torch.utils.cpp_extension.load, -O3 for both compilers, --use_fast_math for nvcc, C++17).

Used by the site (uploads) and by the evaluator (`--solution DIR_OR_ARCHIVE`, jobs): no Django here.

A workdir travels as text (`bundle`): BUNDLE_PREFIX then a JSON object {format, rules, files: {path: text}}, the
files byte for byte as they were in the archive. The site stores that text as the submission's source, so its
hash, deduplication and the job's payload work as for a single file; the archive's own metadata (times, order,
compression) does not change the hash.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import os
import re
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

FORMAT = "cuda_agent_workdir"
BUNDLE_PREFIX = "cuda-agent-workdir:v1\n"
EXTENSION_NAME = "cuda_extension"

# Rule sets (docs/ANTICHEAT.md): KernelHub's own, and CUDA Agent's (its SKILL.md), which adds to ours that
# cuBLAS may serve a GEMM and cuDNN a convolution, and that no other library may be used.
RULES_KERNELHUB = "kernelhub"
RULES_CUDA_AGENT = "cuda_agent"
RULE_SETS = {RULES_KERNELHUB: "KernelHub rules", RULES_CUDA_AGENT: "CUDA Agent rules"}

# Only text sources travel; everything is stored, only root and kernels/ .cu/.cpp are compiled, only
# model_new.py is imported. Shell and Markdown files (the agent's utils/compile.sh, notes) are kept as text.
TEXT_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".txt", ".md", ".sh")
NATIVE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp")
COMPILED_SUFFIXES = (".cu", ".cpp", ".cc")
# Archive noise that is dropped without a word (macOS's resource forks).
_NOISE = re.compile(r"(^|/)(__MACOSX(/|$)|\.DS_Store$)")
# Build outputs left out when a directory is packed (never in an archive: there they are refused).
_BUILD_OUTPUT_DIRS = {"build", "__pycache__", ".git", ".ipynb_checkpoints"}

# The format's limits, the same on the site (which refuses an upload over them) and on every runner.
MAX_ARCHIVE_BYTES = 8 << 20
MAX_FILES = 200
MAX_FILE_BYTES = 256 << 10
MAX_TOTAL_BYTES = 1 << 20
MAX_DEPTH = 4
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$")


class WorkdirError(ValueError):
    """A work directory or archive that is refused; the message says what to change."""


@dataclass
class Workdir:
    files: dict[str, str]
    rules: str = RULES_CUDA_AGENT
    skipped: list[str] = field(default_factory=list)  # left out when a directory was packed (build outputs)

    @property
    def model_py(self) -> str | None:
        return self.files.get("model.py")

    @property
    def model_new_py(self) -> str:
        return self.files["model_new.py"]

    def compiled_sources(self) -> list[str]:
        """What CUDA Agent's compile.py builds: every .cu and .cpp of the root and kernels/, sorted."""
        return sorted(p for p in self.files if p.endswith(COMPILED_SUFFIXES)
                      and (p.count("/") == 0 or (p.count("/") == 1 and p.startswith("kernels/"))))

    def native_files(self) -> dict[str, str]:
        return {p: t for p, t in self.files.items() if p.endswith(NATIVE_SUFFIXES)}

    @property
    def language(self) -> str:
        return "cuda" if any(p.endswith(".cu") for p in self.compiled_sources()) else "cpp"

    def to_bundle(self) -> str:
        return BUNDLE_PREFIX + json.dumps({"format": FORMAT, "rules": self.rules, "files": self.files},
                                          sort_keys=True)


# --- the text form ------------------------------------------------------------------------------------

def is_bundle(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(BUNDLE_PREFIX)


def parse_bundle(text: str) -> Workdir:
    try:
        obj = json.loads(text[len(BUNDLE_PREFIX):])
    except ValueError:
        raise WorkdirError("the workdir text is not valid JSON after its first line") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT or not isinstance(obj.get("files"), dict):
        raise WorkdirError(f"the workdir text must be an object with format {FORMAT!r} and files")
    rules = obj.get("rules") or RULES_CUDA_AGENT
    if rules not in RULE_SETS:
        raise WorkdirError(f"unknown rule set {rules!r}: use one of {', '.join(RULE_SETS)}")
    files = obj["files"]
    total = 0
    for path, content in files.items():
        if not isinstance(content, str):
            raise WorkdirError(f"{path}: the content must be text")
        _check_path(path)
        total += len(content.encode("utf-8"))
    if len(files) > MAX_FILES or total > MAX_TOTAL_BYTES:
        raise WorkdirError(f"the workdir is over {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
    wd = Workdir(files=dict(sorted(files.items())), rules=rules)
    _check_layout(wd)
    return wd


# --- reading archives and directories -----------------------------------------------------------------

def _check_path(name: str) -> str:
    """A member's path, relative and inside the workdir, in parts the builder can write; else WorkdirError."""
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        raise WorkdirError(f"{name!r}: an absolute or Windows path; archive the workdir with relative paths "
                           "(cd into it, then `zip -r ../workdir.zip .`)")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise WorkdirError(f"{name!r}: the path leaves the workdir (..); such an archive is refused")
    if not parts:
        raise WorkdirError(f"{name!r}: an empty path")
    if len(parts) > MAX_DEPTH:
        raise WorkdirError(f"{name!r}: deeper than {MAX_DEPTH} folders")
    for p in parts:
        if not _PART.match(p):
            raise WorkdirError(f"{name!r}: use letters, digits, '_', '-', '.' and '+' in names "
                               "(not starting with '.' or '-')")
    return "/".join(parts)


def _check_suffix(path: str) -> None:
    if not path.endswith(TEXT_SUFFIXES):
        suffix = PurePosixPath(path).suffix or "(no suffix)"
        raise WorkdirError(
            f"{path}: a {suffix} file; a workdir holds sources only ({', '.join(TEXT_SUFFIXES)}). The site builds "
            "the extension itself: remove build outputs (build/, cuda_extension.so, __pycache__/) before archiving")


def _decode(path: str, data: bytes) -> str:
    if b"\x00" in data:
        raise WorkdirError(f"{path}: binary content; only text sources are accepted")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkdirError(f"{path}: not UTF-8 text; save it as UTF-8") from None


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0

    def add(self, path: str, size: int) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            raise WorkdirError(f"the workdir has over {MAX_FILES} files; keep only the sources")
        if size > MAX_FILE_BYTES:
            raise WorkdirError(f"{path}: {size:,} bytes, over the limit of {MAX_FILE_BYTES:,} per file")
        self.bytes += size
        if self.bytes > MAX_TOTAL_BYTES:
            raise WorkdirError(f"the workdir's files come to over {MAX_TOTAL_BYTES:,} bytes uncompressed; keep "
                               "only the sources")


def read_archive(data: bytes, *, rules: str = RULES_CUDA_AGENT) -> Workdir:
    """A zip, tar.gz or tar of a workdir, checked before anything is unpacked; nothing touches the disk."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise WorkdirError(f"the archive is {len(data):,} bytes; the limit is {MAX_ARCHIVE_BYTES:,}")
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        files = _read_zip(data)
    elif data[:2] == b"\x1f\x8b":
        files = _read_tar(_Capped(gzip.GzipFile(fileobj=io.BytesIO(data)), _tar_stream_cap()))
    elif data[257:262] == b"ustar":
        files = _read_tar(_Capped(io.BytesIO(data), _tar_stream_cap()))
    else:
        raise WorkdirError("not a zip, tar.gz or tar archive: archive the workdir with "
                           "`zip -r workdir.zip .` or `tar czf workdir.tar.gz .` from inside it")
    return _finish(files, rules=rules)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_IFMT(mode):  # made on Unix with a file type: it says what the entry is
        if stat.S_ISLNK(mode):
            return "link"
        if stat.S_ISDIR(mode):
            return "dir"
        if not stat.S_ISREG(mode):
            return "special"
    return "dir" if info.is_dir() else "file"


def _read_zip(data: bytes) -> dict[str, str]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise WorkdirError(f"the zip archive cannot be read ({e})") from None
    if len(infos) > MAX_FILES:
        raise WorkdirError(f"the archive has {len(infos):,} entries; a workdir may have at most {MAX_FILES} files")
    budget = _Budget()
    files: dict[str, str] = {}
    chosen = []
    # Every entry is checked from the central directory before any is decompressed.
    for info in infos:
        if _NOISE.search(info.filename):
            continue
        kind = _zip_kind(info)
        if kind == "link":
            raise WorkdirError(f"{info.filename}: a symbolic link; archive the files themselves")
        if kind == "special":
            raise WorkdirError(f"{info.filename}: not a regular file")
        path = _check_path(info.filename)
        if kind == "dir":
            continue
        if info.flag_bits & 0x1:
            raise WorkdirError(f"{path}: encrypted; send an archive without a password")
        _check_suffix(path)
        budget.add(path, info.file_size)  # as declared; the reads below stop at the same caps
        chosen.append((path, info))
    for path, info in chosen:
        try:
            with zf.open(info) as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, RuntimeError) as e:
            raise WorkdirError(f"{path}: cannot be decompressed ({e})") from None
        if len(raw) > MAX_FILE_BYTES or len(raw) != info.file_size:
            raise WorkdirError(f"{path}: its size does not match what the archive declares; the archive is refused")
        if path in files:
            raise WorkdirError(f"{path}: twice in the archive")
        files[path] = _decode(path, raw)
    return files


def _tar_stream_cap() -> int:
    # The tar stream itself: the files, a 512-byte header and padding per member, the end blocks.
    return MAX_TOTAL_BYTES + (MAX_FILES + 1) * 2048 + 20 * 512


class _Capped(io.RawIOBase):
    """Reads at most `cap` decompressed bytes: a compressed bomb stops at the cap, not at the end of the disk."""

    def __init__(self, inner: Any, cap: int) -> None:
        self.inner, self.left = inner, cap

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self.left <= 0:
            raise WorkdirError(f"the archive unpacks to over {_tar_stream_cap():,} bytes; keep only the sources")
        try:
            chunk = self.inner.read(min(len(b), self.left))
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise WorkdirError(f"the archive cannot be decompressed ({e})") from None
        n = len(chunk)
        b[:n] = chunk
        self.left -= n
        return n


def _read_tar(stream: _Capped) -> dict[str, str]:
    budget = _Budget()
    files: dict[str, str] = {}
    members = 0
    try:
        with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as tf:
            for member in tf:
                members += 1
                if members > MAX_FILES * 2:
                    raise WorkdirError(f"the archive has over {MAX_FILES * 2} entries; a workdir may have at most "
                                       f"{MAX_FILES} files")
                if _NOISE.search(member.name):
                    continue
                if member.issym() or member.islnk():
                    raise WorkdirError(f"{member.name}: a link; archive the files themselves")
                if not (member.isreg() or member.isdir()):
                    raise WorkdirError(f"{member.name}: not a regular file")
                path = _check_path(member.name)
                if member.isdir():
                    continue
                _check_suffix(path)
                budget.add(path, member.size)
                f = tf.extractfile(member)
                raw = f.read(MAX_FILE_BYTES + 1) if f else b""
                if path in files:
                    raise WorkdirError(f"{path}: twice in the archive")
                files[path] = _decode(path, raw)
    except tarfile.TarError as e:
        raise WorkdirError(f"the tar archive cannot be read ({e})") from None
    return files


def read_directory(root: Path, *, rules: str = RULES_CUDA_AGENT) -> Workdir:
    """A workdir on disk: its text sources; build outputs (build/, __pycache__/, *.so, ...) are left out and
    named in `skipped`. A symbolic link is refused, as in an archive."""
    root = Path(root)
    if not root.is_dir():
        raise WorkdirError(f"{root}: not a directory")
    budget = _Budget()
    files: dict[str, str] = {}
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        for d in list(dirnames):
            if (Path(dirpath) / d).is_symlink():
                raise WorkdirError(f"{rel_dir / d}: a symbolic link; copy the files instead")
            if d in _BUILD_OUTPUT_DIRS or d.startswith("."):
                dirnames.remove(d)
                skipped.append(f"{(rel_dir / d).as_posix()}/")
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            if full.is_symlink():
                raise WorkdirError(f"{rel}: a symbolic link; copy the file instead")
            if not name.endswith(TEXT_SUFFIXES) or name.startswith(".") or not full.is_file():
                skipped.append(rel)
                continue
            path = _check_path(rel)
            budget.add(path, full.stat().st_size)
            files[path] = _decode(path, full.read_bytes())
    wd = _finish(files, rules=rules)
    wd.skipped = skipped
    return wd


def read_path(path: Path, *, rules: str = RULES_CUDA_AGENT) -> Workdir:
    """A directory or an archive file."""
    path = Path(path)
    if path.is_dir():
        return read_directory(path, rules=rules)
    try:
        size = path.stat().st_size
        if size > MAX_ARCHIVE_BYTES:
            raise WorkdirError(f"{path}: {size:,} bytes; the limit for an archive is {MAX_ARCHIVE_BYTES:,}")
        data = path.read_bytes()
    except OSError as e:
        raise WorkdirError(f"cannot read {path}: {e.strerror}") from None
    return read_archive(data, rules=rules)


def looks_like_archive_name(name: str) -> bool:
    return name.lower().endswith((".zip", ".tar.gz", ".tgz", ".tar"))


def _finish(files: dict[str, str], *, rules: str) -> Workdir:
    if rules not in RULE_SETS:
        raise WorkdirError(f"unknown rule set {rules!r}: use one of {', '.join(RULE_SETS)}")
    # An archive of the folder itself (`zip -r w.zip agent_workdir`): one top folder holding everything.
    tops = {p.split("/")[0] for p in files}
    if "model_new.py" not in files and len(tops) == 1 and all("/" in p for p in files):
        top = tops.pop()
        files = {p[len(top) + 1:]: t for p, t in files.items()}
    wd = Workdir(files=dict(sorted(files.items())), rules=rules)
    _check_layout(wd)
    return wd


def _check_layout(wd: Workdir) -> None:
    if "model_new.py" not in wd.files:
        raise WorkdirError("the workdir has no model_new.py at its top: it defines class ModelNew, which does "
                           "`import cuda_extension` (CUDA Agent's layout; see docs/CLIENT.md)")
    if not wd.compiled_sources():
        raise WorkdirError("the workdir has no .cu or .cpp file in its top folder or kernels/: nothing to build")
    if not any(re.search(rf"PYBIND11_MODULE\s*\(\s*{EXTENSION_NAME}\s*,", wd.files[p])
               for p in wd.compiled_sources()):
        raise WorkdirError(f"no source defines PYBIND11_MODULE({EXTENSION_NAME}, m): keep CUDA Agent's "
                           "binding.cpp (with binding_registry.h) in the workdir")


# --- what the site checks: the problem ------------------------------------------------------------------

def same_problem(model_py: str, problem_source: str) -> bool:
    """model.py is the site's problem: byte for byte, or after line endings and trailing blank space."""
    if model_py == problem_source:
        return True
    return _normalised(model_py) == _normalised(problem_source)


def _normalised(text: str) -> str:
    return text.replace("\r\n", "\n").rstrip() + "\n"


def normalised_hash(text: str) -> str:
    import hashlib

    return hashlib.sha256(_normalised(text).encode("utf-8")).hexdigest()


# --- the build ------------------------------------------------------------------------------------------

def build_request(wd: Workdir) -> dict[str, Any]:
    """The builder's request (gpu_runner/builds.py, kind "workdir"): the native files in their folders, the
    flags of CUDA Agent's compile.py. The Python files stay out: nothing but sources is built."""
    with_cuda = wd.language == "cuda"
    return {"name": EXTENSION_NAME, "tree": wd.native_files(), "sources": wd.compiled_sources(),
            "extra_cflags": ["-O3", "-std=c++17"], "extra_cuda_cflags": ["-O3", "--use_fast_math"] if with_cuda else [],
            "with_cuda": with_cuda}


def trim_errors_per_file(text: str, src_root: str, *, per_file: int = 12, limit: int = 6000) -> str:
    """A failed build's log as the compiler's error lines, grouped by the workdir file they name."""
    text = text.replace(src_root.rstrip("/") + "/", "")
    pattern = re.compile(r"^(?P<file>[\w./+-]+\.(?:cu|cuh|cpp|cc|h|hpp))(?::\d+(?::\d+)?:|\(\d+\):)\s*"
                         r"(?:fatal\s+)?(?P<kind>error|catastrophic error)", re.I)
    by_file: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = pattern.match(line.strip())
        if m:
            by_file.setdefault(m.group("file"), []).append(line.strip())
    if not by_file:
        return ""
    out = []
    for path, lines in by_file.items():
        shown = lines[:per_file]
        more = f"\n  ... and {len(lines) - per_file} more" if len(lines) > per_file else ""
        out.append(f"{path}: {len(lines)} error(s)\n  " + "\n  ".join(shown) + more)
    joined = "\n".join(out)
    return joined if len(joined) <= limit else joined[:limit] + "\n... (trimmed)"


# --- the rules on the sources ---------------------------------------------------------------------------

_GEMM_NAMES = {"matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "linear", "Linear", "Bilinear",
               "LazyLinear", "scaled_dot_product_attention", "MultiheadAttention", "Transformer",
               "TransformerEncoderLayer", "TransformerDecoderLayer", "GRU", "LSTM", "RNN", "tensordot", "inner",
               "mv", "addmv", "chain_matmul", "multi_dot"}
_CONV_NAMES = {"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
               "LazyConv1d", "LazyConv2d", "LazyConv3d", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
               "conv_transpose2d", "conv_transpose3d"}


def problem_operations(problem_source: str) -> set[str]:
    """"gemm" and/or "conv": what the problem's Model computes, read from the names its source uses (and the @
    operator). CUDA Agent's rules allow cuBLAS for the one and cuDNN for the other."""
    try:
        tree = ast.parse(problem_source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    ops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            ops.add("gemm")
    if names & _GEMM_NAMES:
        ops.add("gemm")
    if names & _CONV_NAMES:
        ops.add("conv")
    return ops


# (family, pattern): a library's headers and names in C++/CUDA source.
_LIBRARIES = [
    ("cublas", re.compile(r"#\s*include\s*[<\"](?:cublas\w*\.h|cublasLt\.h|ATen/cuda/CUDABlas\w*\.h)[>\"]"
                          r"|\bcublas\w*|\bgetCurrentCUDABlas\w*Handle\b")),
    ("cudnn", re.compile(r"#\s*include\s*[<\"](?:cudnn\w*\.h|ATen/cudnn/[\w/.]+)[>\"]|\bcudnn\w*"
                         r"|\bgetCudnnHandle\b")),
    ("other", re.compile(r"#\s*include\s*[<\"](?:cufft\w*|cusparse\w*|cusolver\w*|curand\w*|cutensor\w*|nccl\w*|"
                         r"nvrtc\w*|nvjpeg\w*|npp\w*|cutlass/|cute/|thrust/|cub/|cudss|magma|mkl|oneapi|dnnl|"
                         r"openblas|cblas|Eigen/|tensorflow/|triton/)[^>\"]*[>\"]"
                         r"|\b(?:cufft|cusparse|cusolver|curand|cutensor|nccl|nvrtc|cublasXt)\w*\s*\(")),
]
_VENDOR_RULE = "calls a vendor library (cuBLAS, cuDNN, ...) instead of your own kernel"
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"", re.MULTILINE)


def _local_includes_resolved(path: str, text: str, files: dict[str, str]) -> str:
    """Includes of the workdir's own files (kernels/x_binding.cpp: "../binding_registry.h") stay inside the
    workdir: they are blanked before the native rules, which refuse parent-path includes of anything else."""
    base = PurePosixPath(path).parent

    def repl(m: re.Match) -> str:
        target = os.path.normpath(str(base / m.group(1))).replace("\\", "/")
        return "" if target in files and not target.startswith("..") else m.group(0)

    return _INCLUDE.sub(repl, text)


def _finding(rule: str, detail: str) -> dict:
    return {"rule": rule, "detail": detail}


def prescreen(wd: Workdir, problem_source: str, rules: str) -> list[dict]:
    """Static findings on the workdir: model_new.py under the single-file rules (its kernel is the extension),
    every C++/CUDA file under the native rules; with CUDA Agent's rules, cuBLAS only where the problem is a GEMM,
    cuDNN only where it is a convolution, no other library. Empty: nothing objects to running it."""
    from gpu_runner import anticheat

    meta: dict[str, Any] = {}
    try:
        from gpu_runner.formats import problem_metadata

        meta = dict(problem_metadata(problem_source))
    except ValueError:
        pass
    # The custom kernel is the workdir's extension, which model_new.py imports by name.
    meta["allow_static"] = list(meta.get("allow_static") or []) + ["no_custom_kernel"]
    findings = anticheat.prescreen(wd.model_new_py, meta)
    if not re.search(rf"^\s*(?:import\s+{EXTENSION_NAME}\b|from\s+{EXTENSION_NAME}\s+import\b)", wd.model_new_py,
                     re.MULTILINE):
        findings.append(_finding("no_custom_kernel", f"model_new.py does not import {EXTENSION_NAME}: ModelNew must "
                                 "call the functions the workdir's kernels register (`import cuda_extension`)"))
    ops = problem_operations(problem_source)
    for path, text in wd.native_files().items():
        checked = _local_includes_resolved(path, text, wd.files)
        expanded = anticheat._macro_expanded(checked)
        for pattern, why in anticheat.NATIVE_PATTERNS:
            if why == _VENDOR_RULE and rules == RULES_CUDA_AGENT:
                continue  # decided below, by the problem's operations
            m = pattern.search(checked) or (pattern.search(expanded) if expanded else None)
            if m:
                findings.append(_finding("native_escape", f"{path}: {why} (found {m.group(0).strip()!r}); write "
                                         "the computation in your own kernel"))
        if rules != RULES_CUDA_AGENT:
            continue
        for family, pattern in _LIBRARIES:
            m = pattern.search(checked) or (pattern.search(expanded) if expanded else None)
            if not m:
                continue
            found = m.group(0).strip()
            if family == "cublas" and "gemm" not in ops:
                findings.append(_finding("library_not_allowed", f"{path}: uses cuBLAS ({found!r}), which CUDA Agent's "
                                         "rules allow only for a GEMM, and this problem computes none; write the "
                                         "kernel yourself"))
            elif family == "cudnn" and "conv" not in ops:
                findings.append(_finding("library_not_allowed", f"{path}: uses cuDNN ({found!r}), which CUDA Agent's "
                                         "rules allow only for a convolution, and this problem has none; write the "
                                         "kernel yourself"))
            elif family == "other":
                findings.append(_finding("library_not_allowed", f"{path}: uses a library ({found!r}); CUDA Agent's "
                                         "rules allow no library but cuBLAS for GEMM and cuDNN for convolutions"))
    out, seen = [], set()
    for f in findings:
        key = (f["rule"], f["detail"])
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def effective_rules(wd_rules: str | None, problem_source: str) -> str:
    """A problem set selects a rule set through its problems' KERNELHUB["rules"]; it wins over the submission's."""
    try:
        from gpu_runner.formats import problem_metadata

        chosen = problem_metadata(problem_source).get("rules")
    except ValueError:
        chosen = None
    if chosen in RULE_SETS:
        return str(chosen)
    return wd_rules if wd_rules in RULE_SETS else RULES_KERNELHUB
