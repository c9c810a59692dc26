"""An evaluation's status has one writer, apps/submissions/lifecycle.py (issue 16): every other module asks it.

Read from the source, without running it: a call that writes `status=Evaluation.STATUS_...` (an update, a create,
a dict of fields), or an assignment of `Evaluation.STATUS_...` to a `status` attribute or key, anywhere in apps/
but lifecycle.py, is a second writer.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "apps"
# Calls that write what they are given (filter, exclude and the like only read).
WRITING_CALLS = {"update", "create", "get_or_create", "update_or_create", "dict"}
WRITER = ROOT / "submissions" / "lifecycle.py"


def _is_status_constant(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr.startswith("STATUS_")
            and isinstance(node.value, ast.Name) and node.value.id == "Evaluation")


def status_writes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) \
                in WRITING_CALLS:
            found += [f"{path.name}:{node.lineno}" for k in node.keywords
                      if k.arg == "status" and _is_status_constant(k.value)]
        elif isinstance(node, ast.Assign) and _is_status_constant(node.value):
            for target in node.targets:
                named = (isinstance(target, ast.Attribute) and target.attr == "status") or (
                    isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                    and target.slice.value == "status")
                if named:
                    found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_checker_sees_the_writer_it_exempts():
    # lifecycle.py writes each status it moves to; were the checker blind, this would find nothing.
    assert len(status_writes(WRITER)) >= 5


def test_no_other_module_writes_an_evaluation_status():
    others = {str(p.relative_to(ROOT)): status_writes(p) for p in ROOT.rglob("*.py")
              if p != WRITER and "migrations" not in p.parts}
    assert {k: v for k, v in others.items() if v} == {}
