"""The KernelBench problem and solution formats, read without executing anything."""

from __future__ import annotations

import ast
import hashlib
import re
from typing import Any

LANGUAGES = ("cpp", "cuda", "triton", "cupy")

# Metadata keys the evaluator understands, with their types; anything else in KERNELHUB is kept but unused here.
_META_TYPES: dict[str, tuple[type, ...]] = {
    "title": (str,),
    "level": (int,),
    "description": (str,),
    "atol": (int, float),
    "rtol": (int, float),
    "allow_torch": (list, tuple),
    "perturb_timed_inputs": (bool,),
    "precision": (str,),
}


class FormatError(ValueError):
    """A problem or solution file that does not follow the format; the message says what to change."""


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _parse(source: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as e:
        raise FormatError(f"the {what} file is not valid Python: line {e.lineno}: {e.msg}") from None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def problem_metadata(problem_source: str) -> dict[str, Any]:
    """The KERNELHUB dict literal of a problem file (empty when absent), validated."""
    tree = _parse(problem_source, "problem")
    names = _top_level_names(tree)
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise FormatError(
            f"the problem file lacks {', '.join(missing)}: a problem defines class Model(nn.Module), "
            "get_inputs() and get_init_inputs() at module level (KernelBench format)"
        )
    meta: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNELHUB" for t in node.targets):
            try:
                meta = ast.literal_eval(node.value)
            except ValueError:
                raise FormatError("KERNELHUB must be a dict literal (no names or calls in it)") from None
            if not isinstance(meta, dict):
                raise FormatError("KERNELHUB must be a dict literal")
    for key, types in _META_TYPES.items():
        if key in meta and not isinstance(meta[key], types):
            raise FormatError(f"KERNELHUB[{key!r}] must be {' or '.join(t.__name__ for t in types)}")
    for key in ("atol", "rtol"):
        if key in meta and not (0 < float(meta[key]) < 1):
            raise FormatError(f"KERNELHUB[{key!r}] must be between 0 and 1")
    if "precision" in meta:
        from gpu_runner import precision  # imports torch: only for a problem that sets the key

        try:
            precision.level_for(meta)
        except precision.PrecisionSpecError as e:
            raise FormatError(str(e)) from None
    return meta


def check_solution(solution_source: str) -> None:
    tree = _parse(solution_source, "solution")
    if "ModelNew" not in _top_level_names(tree):
        raise FormatError(
            "the solution defines no class ModelNew at module level: write class ModelNew(nn.Module) taking the "
            "same constructor arguments as the problem's Model (KernelBench format)"
        )


_CUPY = re.compile(r"^\s*(import\s+cupy|from\s+cupy\b)|\bcupy\.(RawKernel|RawModule|ElementwiseKernel)|\bcp\.(RawKernel|RawModule)", re.M)
_TRITON = re.compile(r"^\s*(import\s+triton|from\s+triton\b)|@triton\.jit", re.M)
_CUDA = re.compile(r"__global__|cuda_sources\s*=|with_cuda\s*=\s*True|<<<|\.cu['\"]")


def detect_language(solution_source: str) -> str:
    """Which kind of custom code a solution carries: "cuda", "triton", "cupy" or "cpp".

    CuPy and Triton are recognised by their imports, CUDA C++ by kernels or cuda_sources; the rest is C++
    (load_inline with cpp_sources only, the CPU track).
    """
    if _CUPY.search(solution_source):
        return "cupy"
    if _TRITON.search(solution_source):
        return "triton"
    if _CUDA.search(solution_source):
        return "cuda"
    return "cpp"
