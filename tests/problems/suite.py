"""Where the bundled problems and examples live, and how to read them, for the tests in this folder."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = REPO_ROOT / "problems"
EXAMPLES = REPO_ROOT / "examples"

GPU_PROBLEMS = sorted((PROBLEMS / "gpu").glob("level*/*.py"))
CPU_PROBLEMS = sorted((PROBLEMS / "cpu").glob("level*/*.py"))
ALL_PROBLEMS = GPU_PROBLEMS + CPU_PROBLEMS
# examples/<track>/<language>/<stem>.py
GPU_EXAMPLES = sorted((EXAMPLES / "gpu").glob("*/*.py"))
CPU_EXAMPLES = sorted((EXAMPLES / "cpu").glob("*/*.py"))
ALL_EXAMPLES = GPU_EXAMPLES + CPU_EXAMPLES


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO_ROOT)) for p in paths]


def problem_for(example: Path) -> Path | None:
    """The problem an example solves: same stem, same track (gpu or cpu), any level."""
    track = example.relative_to(EXAMPLES).parts[0]
    found = sorted((PROBLEMS / track).glob(f"level*/{example.stem}.py"))
    return found[0] if found else None


def top_level(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node
    return out


def init_params(tree: ast.Module, cls: str) -> list[str]:
    """Names of the constructor's parameters after self (the contract between Model and ModelNew)."""
    node = top_level(tree)[cls]
    assert isinstance(node, ast.ClassDef)
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return [a.arg for a in item.args.args[1:]]
    return []


def load_module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kh_suite_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
