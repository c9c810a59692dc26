"""The verdicts and the stages are written out once, in gpu_runner/contract.py: no other module of the site,
the runners or the client keeps a copy of them that could drift."""

import ast
from pathlib import Path

from gpu_runner.contract import RUNNER_STAGES, VERDICTS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kernelhub", "apps", "gpu_runner", "ane_runner", "kernelhub_client")
CONTRACT = ROOT / "gpu_runner" / "contract.py"


def _copies(path: Path) -> list[str]:
    """Assignments of a literal tuple, list or set of strings that holds every verdict, or the runners' stages
    (a subset such as the verdicts whose messages are public is a different thing, and allowed)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if not isinstance(value, ast.Tuple | ast.List | ast.Set):
            continue
        words = {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if set(VERDICTS) <= words or set(RUNNER_STAGES) - {"prescreen"} <= words:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_it_finds_a_copy_where_there_is_one(tmp_path):
    # The check itself can fail: the contract's own definitions are copies by this measure.
    assert _copies(CONTRACT), "the check found nothing in gpu_runner/contract.py: it cannot see a copy"


def test_it_finds_no_copy_of_the_verdicts_or_stages_outside_the_contract():
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
             if p != CONTRACT and "migrations" not in p.parts]
    assert len(files) > 50
    copies = [where for path in files for where in _copies(path)]
    assert copies == [], f"define these in gpu_runner/contract.py and import them: {copies}"
