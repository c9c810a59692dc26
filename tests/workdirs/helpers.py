"""The example CUDA Agent workdirs (examples/workdirs/) and ways to archive them for the tests."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from tests.conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "workdirs"
PROBLEM_FILE = EXAMPLES / "axpby_fused.py"
WORKDIR_CPU = EXAMPLES / "axpby_fused_cpu"
WORKDIR_CUDA = EXAMPLES / "axpby_fused_cuda"


def workdir_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def zip_bytes(files: dict[str, bytes], prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(prefix + name, data)
    return buffer.getvalue()


def tar_gz_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
