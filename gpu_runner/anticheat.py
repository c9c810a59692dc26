"""Static pre-screen of a solution's source, before anything of it runs.

`prescreen(solution_source, problem_meta)` returns findings `{"rule", "detail"}`; any finding makes the
verdict `rejected`. It runs the checks in a child process bounded in time and memory
(KERNELHUB_PRESCREEN_TIMEOUT_S, KERNELHUB_PRESCREEN_MEMORY_MB): some of kernelguard's regular expressions are
quadratic in the length of a line (a 32 KB comment line took 31 s) and hold the GIL meanwhile, which starved the
worker's keep-alive thread. `prescreen_in_process` is the same checks without the bound. Two layers: the `kernelguard` package's detectors for reward hacks seen in the wild
(only its rules strong enough to auto-filter), and our own AST rules for KernelBench-format solutions.
Static rules are a first filter, cheap and explainable; the runtime guards (gpu_runner/guards.py) and the
out-of-process checks are what a determined attacker meets next. See docs/ANTICHEAT.md.

Imports nothing from Django: runner hosts lack it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpu_runner import config

# Modules a kernel has no honest use for: processes, network, introspection of the harness, persistence.
FORBIDDEN_MODULES = {
    "subprocess": "starting processes",
    "socket": "network access",
    "ssl": "network access",
    "http": "network access",
    "urllib": "network access",
    "requests": "network access",
    "httpx": "network access",
    "aiohttp": "network access",
    "ftplib": "network access",
    "smtplib": "network access",
    "multiprocessing": "starting processes",
    "concurrent": "background workers",
    "threading": "background threads",
    "_thread": "background threads",
    "asyncio": "background work",
    "signal": "signal handlers",
    "gc": "finding the harness's objects through the garbage collector",
    "inspect": "frame inspection of the harness",
    "traceback": "frame inspection of the harness",
    "pickle": "loading serialized objects",
    "marshal": "loading code objects",
    "shelve": "persistent state across evaluations",
    "sqlite3": "persistent state across evaluations",
    "importlib": "dynamic imports",
    "builtins": "patching builtins",
    "__main__": "reaching into the harness",
    "atexit": "exit handlers that change the outcome",
    "pty": "starting processes",
    "resource": "changing the sandbox limits",
    "mmap": "raw memory access",
    "tempfile": "writing files",
    "shutil": "writing files",
    "gpu_runner": "reaching into the evaluator",
}
# Attribute chains that are never part of an honest kernel.
FORBIDDEN_ATTRS = {
    "sys._getframe": "frame inspection of the harness",
    "sys._current_frames": "frame inspection of the harness",
    "sys.settrace": "tracing the harness",
    "sys.setprofile": "profiling the harness",
    "sys.modules": "reaching into other modules",
    "sys.meta_path": "changing how modules are imported (the evaluator guards CuPy's routines on import)",
    "sys.path_hooks": "changing how modules are imported (the evaluator guards CuPy's routines on import)",
    "sys.stdout": "replacing the output streams",
    "sys.stderr": "replacing the output streams",
    "sys.exit": "ending the process early",
    "os._exit": "ending the process early",
    "os.kill": "signalling processes",
    "os.fork": "starting processes",
    "os.system": "starting processes",
    "os.popen": "starting processes",
    "os.environ": "reading or changing the environment",
    "os.putenv": "changing the environment",
    "os.remove": "deleting files",
    "os.unlink": "deleting files",
    "os.rename": "moving files",
    "os.replace": "moving files",
    "os.chdir": "leaving the working directory",
    "torch.compile": "torch.compile does the work with torch, not with your kernel",
    "torch._dynamo": "torch.compile does the work with torch, not with your kernel",
    "torch._inductor": "torch.compile does the work with torch, not with your kernel",
    "torch.jit": "TorchScript does the work with torch, not with your kernel",
    "torch.cuda.CUDAGraph": "CUDA graph replay skips the work being timed",
    "torch.cuda.graph": "CUDA graph replay skips the work being timed",
    "torch.cuda.graphs": "CUDA graph replay skips the work being timed",
    "torch.cuda.make_graphed_callables": "CUDA graph replay skips the work being timed",
    "cupy.cuda.graph": "CUDA graph replay skips the work being timed",
    "cupy.cuda.Graph": "CUDA graph replay skips the work being timed",
    "torch.cuda.set_stream": "switching the current stream hides work from the timer",
    "torch.cuda.Event": "the harness does the timing",
    "torch.utils._python_dispatch": "turning off the evaluator's op guard",
    "torch._C._DisableTorchDispatch": "turning off the evaluator's op guard",
    "torch._C._unset_dispatch_mode": "turning off the evaluator's op guard",
    "torch._C._pop_torch_dispatch_stack": "turning off the evaluator's op guard",
    "torch._C._set_torch_function_mode": "turning off the evaluator's op guard",
    "torch.backends.cuda.matmul.allow_tf32": "changing torch's precision settings",
    "torch.backends.cudnn.allow_tf32": "changing torch's precision settings",
    "torch.set_float32_matmul_precision": "changing torch's precision settings",
    "torch.set_default_dtype": "changing torch's precision settings",
    "torch.manual_seed": "changing the random state used to generate inputs",
    "torch.set_rng_state": "changing the random state used to generate inputs",
    "torch.random": "changing the random state used to generate inputs",
    "torch.cuda.manual_seed": "changing the random state used to generate inputs",
    "torch.cuda.set_rng_state": "changing the random state used to generate inputs",
    "torch.library": "registering torch ops",
    "torch.profiler": "probing the evaluator's op record",
    "torch.autograd.profiler": "probing the evaluator's op record",
    "torch.autograd._profiler_enabled": "probing the evaluator's op record",
    "torch._C._autograd": "probing the evaluator's op record",
    "torch._C._len_torch_dispatch_stack": "probing the evaluator's op guard",
    "torch._C._get_dispatch_mode": "probing the evaluator's op guard",
    "torch._C._get_dispatch_stack_at": "probing the evaluator's op guard",
    "torch.ops.aten": "calling torch's own kernels",
    "torch._C.TensorBase": "calling tensor methods around the evaluator's guards",
    "torch._C._TensorBase": "calling tensor methods around the evaluator's guards",
    "torch._C._to_dlpack": "handing tensors to another array library",
    "torch.overrides": "torch function overrides",
}
# Builtins whose calls hide what the code does or reach the harness.
FORBIDDEN_CALLS = {
    "exec": "running code built at run time",
    "eval": "running code built at run time",
    "compile": "running code built at run time",
    "__import__": "dynamic imports",
    "globals": "reaching into module globals",
    "vars": "reaching into other objects' state",
    "breakpoint": "debugger hooks",
}
# Dunder attributes used to climb from an object to the harness or to code objects.
FORBIDDEN_DUNDERS = {
    "__globals__", "__code__", "__closure__", "__builtins__", "__subclasses__", "__getattribute__",
    "__reduce__", "__reduce_ex__", "__torch_function__", "__torch_dispatch__", "f_back", "f_globals",
    "f_locals", "tb_frame", "gi_frame", "cr_frame", "__mro__", "__bases__", "__base__", "__dict__",
}
# Native escapes in C++/CUDA source: calling torch's kernels or turning off the dispatch guard from C++.
NATIVE_PATTERNS = [
    (re.compile(r"\bat::native::"), "calls torch's native kernels (at::native::) instead of your own"),
    (re.compile(r"\bat::(?:cpu|cuda|meta|compositeexplicitautograd|compositeimplicitautograd)::(?!getCurrent|"
                r"getDefault|CUDAGuard|CUDAStream|OptionalCUDAGuard|CUDAStreamGuard|getStreamFromPool|"
                r"set|current_device|device_count)[a-z_]+\s*\("),
     "calls a torch kernel for one backend directly instead of your own"),
    (re.compile(r"\bExcludeDispatchKeyGuard|\bIncludeDispatchKeyGuard|\bAutoDispatchBelow|\bDispatchKeySet"
                r"|\bredispatch\b|\bc10::Dispatcher\b|\bfindSchema|\bForceDispatchKeyGuard|\btls_set_dispatch_key_\w+"
                r"|\b_?force_tls_local_dispatch_key_set\b|\btls_local_dispatch_key_set\b|\bDispatchKey::Python\w*"
                r"|\bat::_ops::"),
     "changes torch's dispatch from C++ (this turns off the evaluator's op guard)"),
    (re.compile(r"\bhas(?:ThreadLocal|Global)?Callbacks\b|\bisRecordFunctionEnabled\b|\bRecordFunction\w*"
                r"|\badd(?:ThreadLocal|Global)Callback\b|\bATen/record_function\.h|\bautograd::profiler\b"
                r"|\btorch/csrc/(?:autograd/)?profiler"),
     "probes or changes torch's op recorder from C++ (the evaluator records the ops a forward runs)"),
    (re.compile(r"\bat::(?:matmul|mm|bmm|addmm|baddbmm|linear|conv\w*|relu|gelu|softmax|log_softmax|"
                r"layer_norm|batch_norm|group_norm|sum|mean|max|min|exp|tanh|sigmoid|einsum|matmul_out|mm_out|"
                r"cudnn_\w+|_scaled_mm)\s*\(|\btorch::(?:matmul|mm|bmm|addmm|linear|conv\w*|relu|gelu|softmax|"
                r"layer_norm|batch_norm|sum|mean|einsum|tanh|sigmoid|exp)\s*\("),
     "calls a torch compute op from C++ (a torch fallback) instead of your own kernel"),
    (re.compile(r"\bcudaGraph\w*|\bcudaStreamBeginCapture|\bCUDAGraph\b"),
     "uses CUDA graphs (replay skips the work being timed)"),
    (re.compile(r"\bcudaStreamCreate\w*|\bgetStreamFromPool\b|\bcudaSetDevice\b|\bcudaDeviceReset\b"),
     "creates its own CUDA streams or changes the device (work may escape the timer)"),
    (re.compile(r"\bcublas\w*|\bcudnn\w*|\bcublasLt\w*|\bcusparse\w*|\bcufft\w*"),
     "calls a vendor library (cuBLAS, cuDNN, ...) instead of your own kernel"),
    (re.compile(r"\b(?:fopen|freopen|open|openat|creat|opendir|readdir|scandir|ifstream|ofstream|fstream|fwrite|"
                r"mmap|system|popen|execve?|execvp|fork|vfork|socket|connect|dlopen|dlsym|ptrace|getenv|setenv|"
                r"unsetenv|kill|mprotect|syscall)\s*[\(<]|\bstd::filesystem\b|\bstd::(?:i|o)?fstream\b"),
     "makes a system call an honest kernel has no use for (files, processes, network, environment)"),
    (re.compile(r"#\s*(?:include|embed)\s*[<\"](?:/|\.\./)|#\s*embed\b|\.incbin\b"),
     "includes a file by absolute or parent path (reads files outside your sources at build time)"),
    (re.compile(r"\bpthread_create\b|\bstd::thread\b|\bstd::async\b|\bstd::jthread\b|\bat::(?:launch|intraop_launch)\b"),
     "starts threads by hand (use OpenMP parallel loops, which end before your function returns)"),
    (re.compile(r"\bstatic\s+(?:at|torch)::Tensor\b|\bstatic\s+std::(?:unordered_)?map\b"),
     "keeps tensors in static storage across calls (results must be computed on each call)"),
]
CUSTOM_KERNEL_MARKERS = re.compile(
    r"\bload_inline\s*\(|\bcpp_extension\.load\s*\(|\bload\s*\(\s*name\s*=|@\s*(?:triton\.)?jit\b|"
    r"\bRawKernel\s*\(|\bRawModule\s*\(|\bElementwiseKernel\s*\(|\bReductionKernel\s*\("
    r"|@\s*(?:cupyx\.)?jit\.rawkernel\b"
)
# CuPy: the solution's own kernels (RawKernel, RawModule, ElementwiseKernel, ReductionKernel, cupyx.jit) and the glue
# around them are allowed; CuPy's library routines doing the computation (its array functions, ufuncs and reductions,
# linalg, fft, random, cupyx.scipy, the cuBLAS/cuFFT/cuSOLVER/... bindings) are a library fallback, like torch's own
# ops. The runtime guard (gpu_runner/guards.py) leaves the same glue names unwrapped.
CUPY_GLUE = frozenset({
    # the solution's kernels
    "RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "memoize", "clear_memo",
    # wrapping a tensor, copies and allocation (fills, as torch's empty/zeros/full are allowed)
    "asarray", "asanyarray", "array", "ascontiguousarray", "asfortranarray", "from_dlpack", "fromDlpack",
    "asnumpy", "copy", "copyto", "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "ndarray",
    # views and metadata
    "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "expand_dims", "squeeze", "broadcast_to",
    "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d", "split", "array_split", "shape", "size", "ndim",
    "get_array_module", "may_share_memory", "shares_memory", "isscalar",
    # data types, constants and settings
    "dtype", "result_type", "can_cast", "common_type", "min_scalar_type", "promote_types", "finfo", "iinfo",
    "issubdtype", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64", "complex64", "complex128", "intp", "uintp", "intc", "uintc", "byte", "ubyte", "short",
    "ushort", "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble", "newaxis", "pi", "e", "inf",
    "nan", "cuda", "is_available", "show_config", "get_default_memory_pool", "get_default_pinned_memory_pool",
    "errstate", "seterr", "geterr",
    # cupyx: pinned host buffers, the synchronisation check, Python-written kernels
    "empty_pinned", "empty_like_pinned", "zeros_pinned", "zeros_like_pinned", "allow_synchronize", "jit",
})
# Submodules of the allowed `cupy.cuda` that bind vendor libraries (or are CuPy's own sort/scan/reduce library).
CUPY_LIBRARY_MODULES = (
    "cupy.cuda.cublas", "cupy.cuda.cufft", "cupy.cuda.curand", "cupy.cuda.cusolver", "cupy.cuda.cusparse",
    "cupy.cuda.cudnn", "cupy.cuda.cutensor", "cupy.cuda.nccl", "cupy.cuda.thrust", "cupy.cuda.cub",
    "cupy.cuda.get_cublas_handle", "cupy.cuda.device.get_cublas_handle", "cupy_backends.cuda.libs.cublas",
    "cupy_backends.cuda.libs.cufft", "cupy_backends.cuda.libs.curand", "cupy_backends.cuda.libs.cusolver",
    "cupy_backends.cuda.libs.cusparse", "cupy_backends.cuda.libs.cusparselt", "cupy_backends.cuda.libs.cudnn",
    "cupy_backends.cuda.libs.cutensor", "cupy_backends.cuda.libs.nccl",
)
# cupy.ndarray methods that compute (a reduction, a product, a sort): `a.sum()`, `a.dot(b)` on a CuPy array.
CUPY_ARRAY_COMPUTE_METHODS = frozenset({
    "dot", "sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "all", "any",
    "clip", "conj", "conjugate", "round", "trace", "sort", "argsort", "partition", "argpartition", "nonzero", "take",
    "put", "repeat", "choose", "compress", "diagonal", "ptp", "searchsorted",
})
# Calls that give a CuPy array, and the array methods that give one back (views and copies): the names they are
# bound to are followed through a function, so `a = cp.from_dlpack(x); b = a @ w` is seen.
_CUPY_ARRAY_MAKERS = frozenset({"asarray", "asanyarray", "array", "ascontiguousarray", "from_dlpack", "fromDlpack",
                                "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                                "ndarray", "copy", "reshape", "ravel", "transpose", "squeeze", "expand_dims",
                                "broadcast_to"})
_CUPY_ARRAY_VIEWS = frozenset({"reshape", "ravel", "view", "transpose", "swapaxes", "squeeze", "astype", "copy",
                               "flatten", "T", "real", "imag"})
_KERNELGUARD_OFF: set[str] = set()  # kernelguard rules found to misfire on honest KernelBench solutions


# Modules whose attributes a solution must not assign: the harness times, checks and reports with them.
PROTECTED_ROOTS = {"torch", "time", "builtins", "sys", "os", "gc", "threading", "numpy", "math", "triton", "cupy",
                   "cupyx", "cupy_backends", "json", "random", "pickle", "io"}
# Environment variables an honest solution sets before building its extension.
BUILD_ENV_KEYS = {"TORCH_CUDA_ARCH_LIST", "MAX_JOBS"}


def _is_build_env_write(node: ast.AST, full: str) -> bool:
    """os.environ["TORCH_CUDA_ARCH_LIST"] = ...: honest solutions pick their GPU architecture this way."""
    return (
        full == "os.environ"
        and isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in BUILD_ENV_KEYS
    )


def _finding(rule: str, detail: str) -> dict:
    return {"rule": rule, "detail": detail}


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _string_constants(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


class _Aliases(ast.NodeVisitor):
    """Maps local names to the dotted module paths they stand for (`import torch.nn.functional as F`)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.imports: list[tuple[str, int]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.imports.append((a.name, node.lineno))
            self.names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.imports.append(("." * node.level + module, node.lineno))
        for a in node.names:
            full = f"{module}.{a.name}" if module else a.name
            self.imports.append((full, node.lineno))
            self.names[a.asname or a.name] = full


def _expand(dotted: str, aliases: dict[str, str]) -> str:
    head, _, rest = dotted.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return dotted


_CUPY_ROOTS = {"cupy", "cupyx", "cupy_backends"}
CUPY_ADVICE = (
    "CuPy's array functions, ufuncs, reductions, linalg/fft/random, cupyx.scipy and its cuBLAS/cuFFT/... bindings "
    "are library fallbacks like torch's own ops: write the computation as your own RawKernel/RawModule (or an "
    "ElementwiseKernel/ReductionKernel with your own code), and use CuPy only to wrap tensors (cupy.from_dlpack, "
    "cupy.asarray), allocate (cupy.empty) and launch"
)


def cupy_library_use(full: str) -> str | None:
    """What CuPy library routine an expanded name (`cupy.linalg.solve`) is, or None for CuPy's glue (kernels,
    wrapping, allocation, views, dtypes, `cupy.cuda` streams and memory) and for names outside CuPy."""
    parts = full.split(".")
    if parts[0] not in _CUPY_ROOTS or len(parts) == 1:
        return None
    if any(full == m or full.startswith(m + ".") for m in CUPY_LIBRARY_MODULES):
        return "a vendor library binding"
    if any(p.startswith("_") and not p.endswith("__") for p in parts[1:]):
        return "CuPy's internals"
    if parts[0] == "cupy_backends":
        return None  # the CUDA runtime, driver and NVRTC bindings (the libraries are caught above)
    if parts[1] == "ndarray" and len(parts) > 2 and parts[2] in CUPY_ARRAY_COMPUTE_METHODS:
        return "an array method that computes"
    if parts[1] in CUPY_GLUE or parts[1].startswith("__"):
        return None
    return "a CuPy library routine"


def _is_jit_kernel(node: ast.AST) -> bool:
    """A function decorated with cupyx.jit.rawkernel: its body is the solution's own kernel, compiled by CuPy."""
    return isinstance(node, ast.FunctionDef) and any(
        (_dotted(d.func if isinstance(d, ast.Call) else d) or "").endswith("rawkernel") for d in node.decorator_list
    )


class _CupyArrays:
    """Which expressions are CuPy arrays, as far as a reading of the source can tell: calls that make one
    (`cp.from_dlpack(x)`), names and `self.` attributes bound to one anywhere in the module, and their views.
    Operators and compute methods on them run CuPy's library kernels (`a @ b` is cupy.matmul, so cuBLAS)."""

    def __init__(self, tree: ast.Module, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.bound: set[str] = set()
        pairs: list[tuple[ast.AST, ast.AST]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs += zip(target.elts, node.value.elts, strict=False)
                    else:
                        pairs.append((target, node.value))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                pairs.append((node.target, node.value))
        for _ in range(3):  # views of views: `a = cp.asarray(x); b = a.T`
            for bound_to, value in pairs:
                name = _dotted(bound_to)
                if name and self.is_array(value):
                    self.bound.add(name)

    def is_array(self, node: ast.AST) -> bool:
        if isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node) in self.bound:
            return True
        if isinstance(node, ast.Call):
            full = _expand(_dotted(node.func) or "", self.aliases)
            if full.split(".")[0] == "cupy" and full.count(".") == 1 and full.split(".")[1] in _CUPY_ARRAY_MAKERS:
                return True
            node = node.func
            return isinstance(node, ast.Attribute) and node.attr in _CUPY_ARRAY_VIEWS and self.is_array(node.value)
        if isinstance(node, ast.Attribute):
            return node.attr in _CUPY_ARRAY_VIEWS and self.is_array(node.value)
        if isinstance(node, ast.Subscript):
            return self.is_array(node.value)
        return False


_OP_SYMBOLS = {"MatMult": "@", "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%",
               "Pow": "**", "LShift": "<<", "RShift": ">>", "BitOr": "|", "BitXor": "^", "BitAnd": "&"}


def _op(op: ast.AST) -> str:
    return _OP_SYMBOLS.get(type(op).__name__, type(op).__name__)


def _cupy_rules(tree: ast.Module, aliases: dict[str, str], skipped: set[int]) -> list[dict]:
    """library_fallback findings for CuPy: imports and names of its library routines, and operators and compute
    methods on what the source binds to CuPy arrays (types are not known statically: the runtime guard sees the
    rest)."""
    findings: list[dict] = []

    def found(line: int, what: str) -> None:
        findings.append(_finding("library_fallback", f"line {line}: {what}; {CUPY_ADVICE}"))

    arrays = _CupyArrays(tree, aliases)
    inner_chains = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
            for a in node.names:
                full = f"{node.module}.{a.name}" if isinstance(node, ast.ImportFrom) else a.name
                kind = cupy_library_use(full)
                if kind:
                    found(node.lineno, f"import of {full} ({kind})")
        elif isinstance(node, ast.Attribute) and id(node) not in inner_chains:
            full = _expand(_dotted(node) or "", aliases)
            kind = cupy_library_use(full)
            if kind:
                found(node.lineno, f"{full} is {kind}")
            elif node.attr in CUPY_ARRAY_COMPUTE_METHODS and arrays.is_array(node.value):
                found(node.lineno, f".{node.attr}() on a CuPy array is CuPy's library routine (cupy.{node.attr})")
        elif isinstance(node, ast.BinOp) and (arrays.is_array(node.left) or arrays.is_array(node.right)):
            found(node.lineno, f"the operator {_op(node.op)} on a CuPy array runs CuPy's library kernel "
                  "(`a @ b` is cupy.matmul, so cuBLAS; `a + b` is cupy.add)")
        elif isinstance(node, ast.AugAssign) and (arrays.is_array(node.target) or arrays.is_array(node.value)):
            found(node.lineno, f"the operator {_op(node.op)}= on a CuPy array runs CuPy's library kernel")
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not) and arrays.is_array(node.operand):
            found(node.lineno, "a unary operator on a CuPy array runs CuPy's library kernel")
        elif isinstance(node, ast.Compare) and any(arrays.is_array(n) for n in [node.left, *node.comparators]):
            found(node.lineno, "a comparison of CuPy arrays runs CuPy's library kernel")
    return findings


def _ast_rules(tree: ast.Module, source: str) -> list[dict]:
    findings: list[dict] = []
    al = _Aliases()
    al.visit(tree)

    # 1. the entry point
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if "ModelNew" not in classes:
        findings.append(_finding(
            "no_modelnew",
            "the solution defines no top-level class ModelNew(nn.Module); define it, taking the same "
            "constructor arguments as the problem's Model",
        ))
    else:
        forward = [n for n in classes["ModelNew"].body if isinstance(n, ast.FunctionDef) and n.name == "forward"]
        if not forward:
            findings.append(_finding("no_forward", "class ModelNew has no forward method; define forward(self, ...)"))

    # 2. a custom kernel must be present
    if not CUSTOM_KERNEL_MARKERS.search(source):
        findings.append(_finding(
            "no_custom_kernel",
            "no custom kernel found: build one with torch.utils.cpp_extension.load_inline (C++ or CUDA source), "
            "Triton @triton.jit, or CuPy RawKernel/RawModule; a pure-PyTorch ModelNew is not accepted",
        ))

    # 3. forbidden imports
    for name, line in al.imports:
        root = name.lstrip(".").split(".")[0]
        if name.startswith("."):
            findings.append(_finding("forbidden_import", f"line {line}: relative import {name!r}; import only "
                                     "installed packages"))
            continue
        if root in FORBIDDEN_MODULES:
            findings.append(_finding(
                "forbidden_import",
                f"line {line}: import of {name!r} ({FORBIDDEN_MODULES[root]}) is not allowed in a solution; "
                "remove it",
            ))
        elif name.startswith("ctypes"):
            findings.append(_finding(
                "forbidden_import",
                f"line {line}: ctypes reaches raw memory and native libraries; build your kernel with "
                "load_inline, Triton or CuPy instead",
            ))
        else:
            for attr, why in FORBIDDEN_ATTRS.items():
                if name == attr or name.startswith(attr + "."):
                    findings.append(_finding("forbidden_api", f"line {line}: import of {name!r} ({why}); remove it"))

    # 4. attribute chains, calls and dunders
    build_env_nodes = {
        id(n.value) for n in ast.walk(tree)
        if isinstance(n, ast.Subscript) and _is_build_env_write(n, _expand(_dotted(n.value) or "", al.names))
    }
    # Only the longest chain is judged (torch.ops.aten.relu, not also torch.ops.aten and torch.ops).
    inner_chains = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node) if id(node) not in inner_chains else None
            if dotted:
                full = _expand(dotted, al.names)
                if full == "os.environ" and id(node) in build_env_nodes:
                    continue
                for attr, why in FORBIDDEN_ATTRS.items():
                    if full == attr or full.startswith(attr + "."):
                        findings.append(_finding("forbidden_api", f"line {node.lineno}: {full} ({why}); remove it"))
                        break
                parts = full.split(".")
                if "sys" in parts[1:] and parts[parts.index("sys", 1) + 1:][:1] in (["modules"], ["_getframe"],
                                                                                  ["_current_frames"]):
                    findings.append(_finding(
                        "forbidden_api",
                        f"line {node.lineno}: {full} reaches the interpreter's internals through another module; "
                        "remove it",
                    ))
            if node.attr in FORBIDDEN_DUNDERS:
                findings.append(_finding(
                    "introspection",
                    f"line {node.lineno}: .{node.attr} reaches into other objects or frames; remove it",
                ))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = node.func.id
            if fn in FORBIDDEN_CALLS and fn not in al.names:
                findings.append(_finding("forbidden_call", f"line {node.lineno}: {fn}() ({FORBIDDEN_CALLS[fn]}); "
                                         "remove it"))
            if fn == "super" and node.args and not (isinstance(node.args[0], ast.Name) and node.args[0].id in classes):
                findings.append(_finding(
                    "forbidden_call",
                    f"line {node.lineno}: super() with a class that is not one of yours reaches another class's "
                    "methods around the evaluator's guards; use super() inside your own classes",
                ))
            if fn in {"setattr", "getattr", "delattr"} and node.args:
                target = _dotted(node.args[0])
                if target and _expand(target, al.names).split(".")[0] in PROTECTED_ROOTS:
                    if fn != "getattr":
                        findings.append(_finding(
                            "monkeypatch",
                            f"line {node.lineno}: {fn}({target}, ...) changes a module the harness relies on; "
                            "remove it",
                        ))
                    elif len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
                        findings.append(_finding(
                            "forbidden_call",
                            f"line {node.lineno}: getattr({target}, <computed name>) hides which function "
                            "is called; call it by name",
                        ))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                dotted = _dotted(t) if isinstance(t, ast.Attribute) else None
                if isinstance(t, ast.Subscript):
                    dotted = _dotted(t.value)
                if not dotted:
                    continue
                full = _expand(dotted, al.names)
                if full.split(".")[0] in PROTECTED_ROOTS and "." in full and not _is_build_env_write(t, full):
                    findings.append(_finding(
                        "monkeypatch",
                        f"line {node.lineno}: assigning to {full} changes a module the harness relies on; "
                        "remove it",
                    ))

    # 4b. CuPy's library routines; the bodies of cupyx.jit kernels are the solution's own kernel code
    jit_bodies = {id(n) for f in ast.walk(tree) if _is_jit_kernel(f) for n in ast.walk(f) if n is not f}
    findings += _cupy_rules(tree, al.names, jit_bodies)

    # 5. the evaluator's own names, and extension builds the evaluator does not control
    for text in _string_constants(tree):
        if "gpu_runner" in text or "kernelhub_problem" in text:
            findings.append(_finding("harness_access", f"the source names the evaluator ({text[:60]!r}); a solution "
                                     "has no business with the evaluator's modules"))
            break
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func) or ""
            if name.split(".")[-1] in {"load_inline", "load"}:
                findings += _build_call_findings(node)

    # 6. native source in strings (C++/CUDA passed to load_inline), as written and with its own macros expanded
    for text in _string_constants(tree):
        if len(text) < 20:
            continue
        expanded = _macro_expanded(text)
        if expanded is None and "##" in text:
            findings.append(_finding("native_escape", "kernel source pastes tokens (##) in a way the pre-screen "
                                     "cannot expand; write the names out"))
        for pattern, why in NATIVE_PATTERNS:
            m = pattern.search(text) or (pattern.search(expanded) if expanded else None)
            if m:
                findings.append(_finding("native_escape", f"kernel source {why} (found {m.group(0).strip()!r}); "
                                         "write the computation in your own kernel"))
    return findings


# Directives left out before expanding a kernel source's own macros: headers (not read: the rules judge the
# solution's text, and the pre-screen reads no files) and conditionals (every branch is kept, so a name pasted
# together in a branch that only the real build takes is still seen).
_DROPPED_DIRECTIVES = re.compile(r"^[ \t]*#[ \t]*(?:include|include_next|import|embed|if|ifdef|ifndef|elif|elifdef|"
                                 r"elifndef|else|endif|line|pragma|error|warning)\b.*$", re.MULTILINE)


def _macro_expanded(text: str) -> str | None:
    """The source with its own macros expanded by the C preprocessor, so that names built by token pasting
    (`std::CAT(thr, ead)`) meet the native rules; None for a source without macros, or when the expansion
    fails. Best effort: a preprocessor trick can still hide a name, the runtime guards see what it does."""
    if "##" not in text and not re.search(r"#[ \t]*define\b", text):
        return None
    import subprocess

    try:
        proc = subprocess.run(["cpp", "-P", "-undef", "-nostdinc", "-w", "-x", "c++", "-"],
                              input=_DROPPED_DIRECTIVES.sub("", text), capture_output=True, text=True, timeout=20,
                              cwd="/", env={"PATH": "/usr/bin:/bin:/usr/local/bin", "LANG": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


_kernelguard_configured = False


# Compiler and linker flags that run other programs, read files outside the sources, or load plugins.
_DANGEROUS_FLAG = re.compile(r"^(?:-B|-wrapper|-fplugin|-specs|--specs|-include|-imacros|@|-Wl,.*(?:--wrap|-rpath"
                             r"|-plugin|--dynamic-linker)|-fprofile-generate|-fprofile-dir|-o\b|-save-temps|"
                             r"-dumpdir|-MF|-fdump)")


def _build_call_findings(call: ast.Call) -> list[dict]:
    findings = []
    for kw in call.keywords:
        if kw.arg == "build_directory":
            findings.append(_finding(
                "build_escape",
                f"line {call.lineno}: build_directory= is not allowed: the evaluator decides where extensions are "
                "built and cached; remove the argument",
            ))
        if kw.arg in {"extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths"}:
            for flag in _string_constants(kw.value):
                if kw.arg == "extra_include_paths" or _DANGEROUS_FLAG.match(flag.strip()):
                    findings.append(_finding(
                        "build_escape",
                        f"line {call.lineno}: the build option {flag!r} ({kw.arg}) can run programs or read files "
                        "outside your sources; use plain optimisation and architecture flags only",
                    ))
    return findings


def _kernelguard_rules(source: str) -> list[dict]:
    global _kernelguard_configured
    try:
        import kernelguard
    except ImportError:  # the runner still has its own rules; say so in the findings' absence
        return []
    if not _kernelguard_configured:
        # kernelguard looks for a `custom_kernel` entry point (GPU MODE's format); ours is ModelNew.forward.
        kernelguard.configure_runtime(config_data={"entrypoints": {"names": ["custom_kernel", "ModelNew"]}})
        _kernelguard_configured = True
    findings = []
    try:
        result: dict[str, Any] = kernelguard.analyze_code(source, {}, compute_structural_hash=False)
    except Exception as exc:  # a detector crashing on odd source must not let the source through unchecked
        return [_finding("kernelguard_error", f"the kernelguard pre-screen could not analyse the source ({exc}); "
                         "simplify the code")]
    for match in result.get("matched_patterns", []):
        name = match.get("pattern", "")
        if name in _KERNELGUARD_OFF or name.startswith("SCORE_"):
            continue
        policy = kernelguard.get_rule_policy(name)
        if policy.max_outcome != kernelguard.AUTO_FILTER:
            continue
        findings.append(_finding(
            f"kernelguard:{name}",
            f"kernelguard found {name.lower().replace('_', ' ')}: {match.get('evidence', '')}; "
            "this pattern is a known reward hack, remove it",
        ))
    return findings


def _without_main_block(tree: ast.Module) -> tuple[ast.Module, list[dict]]:
    """The module without `if __name__ == "__main__":` blocks, which never run when the harness imports it
    (LLM-written solutions often carry a self-test there, with timers and prints)."""
    findings = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__name__" for t in targets):
            line = getattr(node, "lineno", "?")
            findings.append(_finding("monkeypatch", f"line {line}: assigning to __name__ is not allowed; remove it"))
    if findings:
        return tree, findings

    def is_main_test(node: ast.stmt) -> bool:
        test = node.test if isinstance(node, ast.If) else None
        return (
            isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__" and isinstance(test.ops[0], ast.Eq)
        )

    kept = ast.Module(body=[n for n in tree.body if not is_main_test(n)], type_ignores=[])
    return kept, []


def prescreen_in_process(solution_source: str, problem_meta: dict) -> list[dict]:
    """Static findings on a solution; empty means no rule objects to running it. Unbounded: see prescreen()."""
    try:
        tree = ast.parse(solution_source)
    except SyntaxError as exc:
        return [_finding("syntax_error", f"the solution is not valid Python: {exc.msg} at line {exc.lineno}; fix it")]
    tree, findings = _without_main_block(tree)
    findings += _ast_rules(tree, solution_source)
    findings += _kernelguard_rules(solution_source)
    allowed = set(problem_meta.get("allow_static") or [])
    out, seen = [], set()
    for f in findings:
        key = (f["rule"], f["detail"])
        if f["rule"] in allowed or key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


# --- The bound ---------------------------------------------------------------------------------------------

def prescreen_limits() -> tuple[float, int]:
    """(wall-clock seconds, address-space bytes) the pre-screen's child may use. An honest 160 KB source takes
    about 0.2 s and under 100 MB (2026-12-01, a 2-core machine): the defaults leave two orders of magnitude."""
    timeout_s = float(config.setting("prescreen_timeout_s"))
    memory_mb = float(config.setting("prescreen_memory_mb"))
    return timeout_s, int(memory_mb * (1 << 20))


def _longest_line(source: str) -> tuple[int, int]:
    """(length, 1-based line number) of the source's longest line."""
    best = (0, 1)
    for number, line in enumerate(source.splitlines() or [""], start=1):
        if len(line) > best[0]:
            best = (len(line), number)
    return best


def _timeout_finding(source: str, timeout_s: float) -> dict:
    length, line = _longest_line(source)
    shape = (f" Its longest line (line {line}) has {length:,} characters: pattern checks slow down with the "
             "length of a line." if length > 1000 else "")
    return _finding("prescreen_timeout",
                    f"the static pre-screen did not finish within {timeout_s:g} s, so the source was not run.{shape}"
                    " Break long lines (comments, strings, data) into lines of at most 1,000 characters, drop "
                    "padding, and submit again")


def prescreen(solution_source: str, problem_meta: dict) -> list[dict]:
    """prescreen_in_process() in a child process with a wall-clock, CPU and memory limit.

    The caller waits on a pipe (the GIL is free: the runner's keep-alive thread goes on posting, and Celery's
    soft time limit can interrupt the wait, which kills the child). Running out of time or memory is a finding
    that says what to change; a child that cannot start at all is the runner's fault and raises RuntimeError.
    """
    timeout_s, memory_bytes = prescreen_limits()
    request = json.dumps({"source": solution_source, "meta": problem_meta, "memory_bytes": memory_bytes,
                          "cpu_s": int(timeout_s) + 2})
    package_parent = str(Path(__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")}
    env["PYTHONPATH"] = os.pathsep.join([package_parent, *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        proc = subprocess.run([sys.executable, "-m", "gpu_runner.anticheat"], input=request.encode("utf-8"),
                              capture_output=True, timeout=timeout_s, cwd=package_parent, env=env)
    except subprocess.TimeoutExpired:
        return [_timeout_finding(solution_source, timeout_s)]
    try:
        answer = json.loads(proc.stdout or b"null")
    except ValueError:
        answer = None
    if proc.returncode == 0 and isinstance(answer, dict) and isinstance(answer.get("findings"), list):
        return answer["findings"]
    if proc.returncode == 0 and isinstance(answer, dict) and answer.get("exhausted"):
        what = answer["exhausted"]
        bound = f" ({memory_bytes >> 20} MB at most)" if what == "memory" else ""
        return [_finding("prescreen_error", f"the static pre-screen ran out of {what} on this source{bound}; "
                         "simplify the code (less nesting, shorter lines) and submit again")]
    if proc.returncode == -24:  # SIGXCPU: its CPU limit, the same bound as the wall clock's
        return [_timeout_finding(solution_source, timeout_s)]
    if proc.returncode < 0:  # killed by a signal: a stack overflow in the parser on pathological nesting
        return [_finding("prescreen_error", f"the static pre-screen crashed on this source (signal {-proc.returncode})"
                         "; simplify the code (less nesting, shorter lines) and submit again")]
    tail = proc.stderr.decode("utf-8", "replace")[-1500:]
    raise RuntimeError(f"the pre-screen process failed (exit status {proc.returncode}): {tail}")


def _child_main() -> int:
    """`python -m gpu_runner.anticheat`: the bounded side of prescreen(). Reads {"source", "meta",
    "memory_bytes", "cpu_s"} as JSON on stdin, writes {"findings": [...]} (or {"exhausted": what}) on stdout."""
    import resource

    request = json.loads(sys.stdin.buffer.read())
    try:
        import ctypes

        # Dies with the worker that started it (Linux): a worker killed at its hard time limit leaves nothing.
        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass
    resource.setrlimit(resource.RLIMIT_AS, (request["memory_bytes"], request["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_s"], request["cpu_s"] + 1))
    try:
        findings = prescreen_in_process(request["source"], request["meta"])
    except MemoryError:
        answer: dict[str, Any] = {"exhausted": "memory"}
    except RecursionError:
        answer = {"exhausted": "stack depth"}
    else:
        answer = {"findings": findings}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main())
