"""Problems: a KernelBench-shaped file read without running it, and loaded as a versioned Problem on its pools.

Loading a file again with another text makes a new version; a submission keeps the version it was made against.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.devices.models import HardwarePool
from apps.submissions.models import Problem, ProblemVersion, sha256_text

# CPython 3.11's AST builder keeps its recursion depth in state that the threads of a process share; two
# requests parsing at once (ASGI runs each sync view on its own thread) once failed with "SystemError: AST
# constructor recursion depth mismatch" under load (python/cpython#106905 is the report). The web process parses
# one source at a time: a parse takes well under a millisecond and holds the GIL anyway.
AST_PARSE_LOCK = threading.Lock()


class ProblemError(Exception):
    """A problem file that cannot be loaded; the message says what to fix."""


def problem_slug_from_path(path: Path) -> str:
    return path.stem.lower().replace("_", "-")


@dataclass
class ProblemFileInfo:
    title: str
    level: int
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def problem_file_read(*, path: Path, source: str) -> ProblemFileInfo:
    """Checks the KernelBench shape and reads the optional KERNELHUB dict without executing the file."""
    try:
        with AST_PARSE_LOCK:
            tree = ast.parse(source, filename=str(path))
    except SyntaxError as e:
        raise ProblemError(f"{path}: not valid Python (line {e.lineno}: {e.msg}).") from None
    names = {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise ProblemError(
            f"{path}: a KernelBench problem defines class Model, get_inputs() and get_init_inputs() at module "
            f"level; missing: {', '.join(missing)}."
        )
    metadata: dict[str, Any] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "KERNELHUB"):
            try:
                metadata = ast.literal_eval(node.value)
            except ValueError:
                raise ProblemError(f"{path}: KERNELHUB must be a dict of literals (strings, numbers, lists).") \
                    from None
            if not isinstance(metadata, dict):
                raise ProblemError(f"{path}: KERNELHUB must be a dict.")
    level = metadata.get("level")
    if level is None:
        # The nearest folder named levelN: a checkout under a path such as /tmp/level0-tests/ must not count.
        match = next((m for part in reversed(path.parent.parts) if (m := re.fullmatch(r"level(\d+)", part))),
                     None)
        level = int(match.group(1)) if match else 1
    if not isinstance(level, int) or not 1 <= level <= 9:
        raise ProblemError(f"{path}: level must be an integer from 1 to 9, not {level!r}.")
    title = metadata.get("title") or path.stem.replace("_", " ").strip().capitalize()
    return ProblemFileInfo(title=str(title)[:200], level=level, description=str(metadata.get("description", "")),
                           metadata=metadata)


def problem_default_pools(*, path: Path) -> list[HardwarePool]:
    """Pools for a bundled file by its nearest track folder: problems/cpu/** -> `cpu`, problems/gpu/** -> every
    active GPU pool, problems/ane/** -> every active ANE pool; elsewhere, DEFAULT_HARDWARE_POOL."""
    for part in reversed([p.lower() for p in path.resolve().parent.parts]):
        if part == "cpu":
            return list(HardwarePool.objects.filter(slug="cpu", is_active=True))
        if part == "gpu":
            return list(HardwarePool.objects.filter(kind=HardwarePool.KIND_GPU, is_active=True))
        if part == "ane":
            return list(HardwarePool.objects.filter(kind=HardwarePool.KIND_ANE, is_active=True))
    return list(HardwarePool.objects.filter(slug=settings.DEFAULT_HARDWARE_POOL))


@transaction.atomic
def problem_load_from_file(*, path: Path, level: int | None = None, hardware: list[str] | None = None,
                           slug: str | None = None, title: str | None = None,
                           origin: str | None = None) -> tuple[Problem, str]:
    """Creates or updates the problem of a file; a changed source makes a new ProblemVersion.

    `slug`, `title` (unless the file's metadata has one) and `origin` override what the file name gives;
    import_kernelbench names l1-19-relu from KernelBench/level1/19_ReLU.py that way.
    """
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProblemError(f"{path}: cannot read it ({e}).") from None
    info = problem_file_read(path=path, source=source)
    if level is not None:
        info.level = level
    if title and not info.metadata.get("title"):
        info.title = title[:200]
    if hardware:
        pools = list(HardwarePool.objects.filter(slug__in=hardware))
        unknown = sorted(set(hardware) - {p.slug for p in pools})
        if unknown:
            raise ProblemError(
                f"Unknown hardware pool {', '.join(unknown)}: create it first (`manage.py create_runner --name N "
                f"--pool {unknown[0]}` creates a pool with its first runner), or pick one of "
                f"{', '.join(HardwarePool.objects.values_list('slug', flat=True)) or 'none yet'}."
            )
    else:
        pools = problem_default_pools(path=path)
    slug = slug or problem_slug_from_path(path)
    content_hash = sha256_text(source)
    now = timezone.now()

    problem = Problem.objects.select_for_update().filter(slug=slug).first()
    if problem is None:
        problem = Problem(slug=slug, title=info.title, level=info.level, description=info.description,
                          source=source, content_hash=content_hash, version=1, origin=origin or str(path),
                          created_at=now, updated_at=now)
        problem.full_clean()
        problem.save()
        ProblemVersion.objects.create(problem=problem, version=1, source=source, content_hash=content_hash)
        problem.pools.set(pools)
        return problem, "created"

    changed = False
    if problem.content_hash != content_hash:
        problem.version += 1
        problem.source = source
        problem.content_hash = content_hash
        ProblemVersion.objects.create(problem=problem, version=problem.version, source=source,
                                      content_hash=content_hash)
        changed = True
    for attr in ("title", "level", "description"):
        if getattr(problem, attr) != getattr(info, attr):
            setattr(problem, attr, getattr(info, attr))
            changed = True
    if set(problem.pools.all()) != set(pools):
        problem.pools.set(pools)
        changed = True
    if not changed:
        return problem, "unchanged"
    problem.updated_at = now
    problem.full_clean()
    problem.save()
    return problem, "updated"
