"""python manage.py import_kernelbench PATH: the public KernelBench suite from a local checkout (docs/DATA.md).

KernelBench keeps its problems as KernelBench/level{1,2,3}/<number>_<Name>.py, e.g. level1/19_ReLU.py.
Each becomes the problem `l<level>-<number>-<name>` (l1-19-relu), titled after its name ("ReLU").
Importing again is idempotent: unchanged files are left alone, a changed file makes a new problem version.
"""

import re
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.devices.models import HardwarePool
from apps.submissions.models import Problem
from apps.submissions.problems import ProblemError, problem_load_from_file

LEVELS = (1, 2, 3)
FILE_RE = re.compile(r"^(?P<number>\d+)_(?P<name>.+)\.py$")


def kernelbench_slug(*, level: int, number: int, name: str) -> str:
    """l1-19-relu: the name lower-cased, runs of anything but letters and digits turned into one `-`."""
    name_part = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"l{level}-{number}-{name_part}"[:120].rstrip("-")


def kernelbench_title(name: str) -> str:
    return re.sub(r"\s+", " ", name.replace("_", " ")).strip() or name


def kernelbench_levels_dir(path: Path) -> Path:
    """PATH may be the repository's root (holding KernelBench/) or the KernelBench/ folder itself."""
    for candidate in (path / "KernelBench", path):
        if any((candidate / f"level{n}").is_dir() for n in LEVELS):
            return candidate
    raise CommandError(
        f"No level1/, level2/ or level3/ folder under {path} or {path / 'KernelBench'}: point PATH at a "
        "checkout of KernelBench (git clone https://github.com/ScalingIntelligence/KernelBench) or at its "
        "KernelBench/ folder."
    )


class Command(BaseCommand):
    help = ("Import KernelBench's problems (KernelBench/level{1,2,3}/N_Name.py) as l<level>-<N>-<name>; "
            "idempotent.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", metavar="PATH", help="a KernelBench checkout, or its KernelBench/ folder")
        parser.add_argument("--hardware", metavar="POOL", action="append",
                            help="pool to offer the problems on (repeatable; default: every active GPU pool, "
                                 "or DEFAULT_HARDWARE_POOL where there is none)")
        parser.add_argument("--level", type=int, choices=LEVELS, action="append",
                            help="import only this level (repeatable; default: 1, 2 and 3)")

    def handle(self, *args: object, path: str, hardware: list[str] | None, level: list[int] | None,
               **options: object) -> None:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise CommandError(f"{root} is not a directory: give the path of a KernelBench checkout.")
        levels_dir = kernelbench_levels_dir(root)
        pools = hardware or list(HardwarePool.objects.filter(kind=HardwarePool.KIND_GPU, is_active=True)
                                 .values_list("slug", flat=True)) or [settings.DEFAULT_HARDWARE_POOL]
        unknown = sorted(set(pools) - set(HardwarePool.objects.filter(slug__in=pools).values_list("slug", flat=True)))
        if unknown:
            known = ", ".join(HardwarePool.objects.values_list("slug", flat=True)) or "none yet"
            raise CommandError(f"Unknown hardware pool {', '.join(unknown)}; the pools are: {known}.")
        counts = {"created": 0, "updated": 0, "unchanged": 0, "error": 0}
        for lvl in level or LEVELS:
            for number, files in kernelbench_files(levels_dir / f"level{lvl}", self.stderr.write).items():
                if len(files) > 1:
                    counts["error"] += 1
                    self.stderr.write(f"error    level{lvl}: several files are problem {number} "
                                      f"({', '.join(f.name for f in files)}): keep one and import again")
                    continue
                file, name = files[0], FILE_RE.match(files[0].name)["name"]  # type: ignore[index]
                slug = kernelbench_slug(level=lvl, number=number, name=name)
                # KernelBench renames a problem when it fixes it; the problem keeps its slug and gets a version.
                earlier = kernelbench_problem_slug(level=lvl, number=number)
                renamed = earlier is not None and earlier != slug
                try:
                    _, outcome = problem_load_from_file(path=file, level=lvl, hardware=pools, slug=earlier or slug,
                                                        title=kernelbench_title(name), origin="kernelbench")
                except ProblemError as exc:
                    counts["error"] += 1
                    self.stderr.write(f"error    {file}: {exc}")
                    continue
                counts[outcome] += 1
                if outcome != "unchanged" or options["verbosity"] >= 2:  # type: ignore[operator]
                    note = "; renamed file, slug kept" if renamed else ""
                    self.stdout.write(f"{outcome:<9}{earlier or slug}  ({file.relative_to(levels_dir)}{note})")
        self.stdout.write(f"KernelBench import from {levels_dir} on {', '.join(pools)}: "
                          + ", ".join(f"{n} {k}" for k, n in counts.items()))
        if counts["error"]:
            raise CommandError(f"{counts['error']} problem(s) could not be imported; see the errors above.")


def kernelbench_files(folder: Path, warn: Callable[[str], object]) -> dict[int, list[Path]]:
    """The problem files of one level by number. `N_Name_OLD.py` is the superseded copy KernelBench keeps
    beside a fixed problem: not a problem of its own."""
    found: dict[int, list[Path]] = {}
    if not folder.is_dir():
        return found
    for file in sorted(folder.glob("*.py")):
        match = FILE_RE.match(file.name)
        if not match:
            warn(f"skipped  {file}: not named <number>_<Name>.py as KernelBench names them")
            continue
        if file.stem.endswith("_OLD"):
            warn(f"skipped  {file}: a superseded copy (_OLD) of problem {match['number']}")
            continue
        found.setdefault(int(match["number"]), []).append(file)
    return dict(sorted(found.items()))


def kernelbench_problem_slug(*, level: int, number: int) -> str | None:
    """The slug an earlier import gave this level and number, if exactly one problem has it."""
    slugs = list(Problem.objects.filter(origin="kernelbench", slug__startswith=f"l{level}-{number}-")
                 .values_list("slug", flat=True)[:2])
    return slugs[0] if len(slugs) == 1 else None
