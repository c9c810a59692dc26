"""`manage.py load_problems FILE_OR_DIR... [--level N] [--hardware POOL]`: idempotent."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.submissions.problems import ProblemError, problem_load_from_file


def problem_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if not p.name.startswith("_"))
        elif path.is_file():
            files.append(path)
        else:
            raise CommandError(f"{raw}: no such file or directory.")
    return files


class Command(BaseCommand):
    help = ("Load KernelBench-format problem files (slug: the file name's stem, lower-cased, _ -> -). "
            "Without --hardware, problems/cpu/** go to the cpu pool and problems/gpu/** to every GPU pool.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
        parser.add_argument("--level", type=int, help="KernelBench level (default: KERNELHUB or level<N>/).")
        parser.add_argument("--hardware", action="append", metavar="POOL",
                            help="Offer the problems on this pool (repeatable; the pool must exist).")

    def handle(self, *args: object, paths: list[str], level: int | None, hardware: list[str] | None,
               **options: object) -> None:
        files = problem_files(paths)
        if not files:
            raise CommandError(f"No .py files in {', '.join(paths)}.")
        counts = {"created": 0, "updated": 0, "unchanged": 0}
        errors = []
        for path in files:
            try:
                problem, outcome = problem_load_from_file(path=path, level=level, hardware=hardware)
            except ProblemError as e:
                errors.append(str(e))
                continue
            counts[outcome] += 1
            pools = ", ".join(p.slug for p in problem.pools.all()) or "no pool"
            self.stdout.write(f"{outcome:9} {problem.slug} (v{problem.version}, level {problem.level}, {pools})")
        self.stdout.write(f"{counts['created']} created, {counts['updated']} updated, "
                          f"{counts['unchanged']} unchanged, {len(errors)} refused.")
        if errors:
            raise CommandError("\n".join(errors))
