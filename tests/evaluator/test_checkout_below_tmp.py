"""A checkout or interpreter below /tmp (CI clones anywhere) stays visible to the locked-down child, whose
/tmp is a fresh tmpfs: the directories on its sys.path are bound back, read-only."""

import sys
import tempfile
from pathlib import Path

from gpu_runner.sandbox import _paths_to_keep


def test_it_keeps_sys_path_entries_below_a_tmpfs(monkeypatch):
    root = Path(tempfile.mkdtemp(dir="/tmp")).resolve()
    (root / "repo" / "pkg").mkdir(parents=True)
    (root / "venv").mkdir()
    monkeypatch.setattr(sys, "path", [str(root / "repo"), str(root / "repo" / "pkg"), "/usr/lib", str(root / "venv")])
    kept = _paths_to_keep(["/tmp", "/dev/shm"], exclude=str(root / "work"))
    assert str(root / "repo") in kept and str(root / "venv") in kept
    # Outermost only (the nested entry comes along with its parent), and nothing outside the tmpfs points.
    assert str(root / "repo" / "pkg") not in kept and "/usr/lib" not in kept


def test_it_leaves_out_the_childs_own_directory(monkeypatch):
    work = Path(tempfile.mkdtemp(dir="/tmp")).resolve()
    monkeypatch.setattr(sys, "path", [str(work)])
    assert str(work) not in _paths_to_keep(["/tmp"], exclude=str(work))
