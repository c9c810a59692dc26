"""python manage.py import_generations DIR --entrant NAME: bulk-submit generated solutions (docs/DATA.md).

Made for the outputs of an LLM or agent run over KernelBench: every solution file is submitted as the entrant
through submission_create, like an API submission, and the leaderboard counts each problem's best one.
A file's problem is read from its path; the layouts understood, tried in this order:

  1. level_1_problem_19_sample_0_kernel.py    KernelBench's own runs/ naming; underscores optional
     level1_problem19_sample0.py              (level1_problem19.py too), anything may follow the numbers
  2. level1/19_ReLU.py                        a mirror of KernelBench's tree (level_1/ too); anything may follow
     level1/19_ReLU_sample_3.py               the leading number
  3. l1-19-relu.py, relu_scale_bias.py       the problem's slug as the file name (`_` for `-` allowed), or as
     l1-19-relu/sample_3.py                   the folder name for several samples of one problem
  4. l1-19.py, l1-19_sample3.py              l<level>-<number>, anything after it

A level and number resolve to the imported KernelBench problem l<level>-<number>-<name> (import_kernelbench).

CUDA Agent's work directories (a folder holding model_new.py, or a .zip / .tar.gz of one) are submitted whole
(gpu_runner/workdir.py): the folder's or archive's name gives the problem by the same layouts
(level1/19_ReLU/, l1-19-relu.zip), and otherwise its model.py, which must be the problem's file anyway.
Every sample is submitted (an identical source is a duplicate, not a second evaluation); the rate limit is not
applied, since an operator is asking for this batch on purpose. --dry-run checks everything and writes nothing.
"""

import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import Q

from apps.devices.models import HardwarePool
from apps.submissions.models import Entrant, Problem, sha256_text
from apps.submissions.services import SubmissionError, submission_create, submission_create_from_workdir
from gpu_runner import workdir as agent_workdir

KERNELBENCH_NAME_RE = re.compile(r"^level_?(?P<level>\d+)_problem_?(?P<number>\d+)(?![0-9])", re.IGNORECASE)
LEVEL_DIR_RE = re.compile(r"^level_?(?P<level>\d+)$", re.IGNORECASE)
MIRROR_FILE_RE = re.compile(r"^(?P<number>\d+)(?:_|$)")
SHORT_SLUG_RE = re.compile(r"^l(?P<level>\d+)-(?P<number>\d+)(?=$|[-_.])", re.IGNORECASE)


class Rollback(Exception):
    """Undoes a dry run's submission_create (and drops its dispatch, which waits for a commit)."""


def problem_for_level_number(level: int, number: int) -> tuple[Problem | None, str]:
    prefix = f"l{level}-{number}"
    found = list(Problem.objects.filter(Q(slug=prefix) | Q(slug__startswith=prefix + "-"))[:2])
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, (f"no problem for level {level} number {number} (slug {prefix}-...): import the suite "
                      "first with `manage.py import_kernelbench PATH`")
    return None, f"level {level} number {number} matches several problems ({found[0].slug}, {found[1].slug})"


def problem_for_path(rel: Path) -> tuple[Problem | None, str]:
    """The problem a generated file is for, or None and why not (see the layouts in the module's docstring)."""
    stem = rel.stem
    match = KERNELBENCH_NAME_RE.match(stem)
    if match:
        return problem_for_level_number(int(match["level"]), int(match["number"]))
    parent = rel.parent.name
    level_dir = LEVEL_DIR_RE.match(parent)
    mirror = MIRROR_FILE_RE.match(stem)
    if level_dir and mirror:
        return problem_for_level_number(int(level_dir["level"]), int(mirror["number"]))
    # The project's slug rule (stem lower-cased, `_` -> `-`): examples/cpu/cpp/gelu_erf_cpu.py is gelu-erf-cpu.
    for name in (stem.lower().replace("_", "-"), parent.lower().replace("_", "-")):
        problem = Problem.objects.filter(slug=name).first() if name else None
        if problem is not None:
            return problem, ""
    short = SHORT_SLUG_RE.match(stem)
    if short:
        return problem_for_level_number(int(short["level"]), int(short["number"]))
    return None, ("the name matches no known layout (level_1_problem_19_sample_0_kernel.py, level1/19_ReLU.py, "
                  "l1-19-relu.py): rename it, or see `manage.py import_generations --help`")


class Command(BaseCommand):
    help = ("Submit every generated solution under DIR as the entrant NAME; the problem is read from each "
            "file's name (level_1_problem_19_sample_0_kernel.py, level1/19_ReLU.py, l1-19-relu.py, ...).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", metavar="DIR", help="folder of generated solutions (searched recursively)")
        parser.add_argument("--entrant", required=True, metavar="NAME",
                            help="entrant name (or slug) to submit as; create it with `manage.py create_entrant`")
        parser.add_argument("--hardware", metavar="POOL", help="pool to evaluate on (default: the site's)")
        parser.add_argument("--dry-run", action="store_true",
                            help="check every file (problem, pool, language, duplicate) and submit nothing")

    def handle(self, *args: object, dir: str, entrant: str, hardware: str | None, dry_run: bool,
               **options: object) -> None:
        root = Path(dir).expanduser()
        if not root.is_dir():
            raise CommandError(f"{root} is not a directory: give the folder holding the generated .py files.")
        who = Entrant.objects.filter(Q(name=entrant) | Q(slug=entrant)).first()
        if who is None:
            raise CommandError(f"No entrant named {entrant!r}: create it first, e.g. "
                               f"`python manage.py create_entrant --name {entrant!r} --kind llm`.")
        if hardware and not HardwarePool.objects.filter(slug=hardware, is_active=True).exists():
            active = ", ".join(HardwarePool.objects.filter(is_active=True).values_list("slug", flat=True))
            raise CommandError(f"No active hardware pool {hardware!r}; active pools: {active or 'none'}.")
        visible = [p for p in root.rglob("*") if not any(part.startswith(".") for part in p.relative_to(root).parts)]
        workdirs = sorted(p.parent for p in visible if p.name == "model_new.py" and p.is_file())
        workdirs = [w for w in workdirs if not any(o != w and o in w.parents for o in workdirs)]

        def in_workdir(p: Path) -> bool:
            return any(w == p.parent or w in p.parents for w in workdirs)

        archives = sorted(p for p in visible if p.is_file() and agent_workdir.looks_like_archive_name(p.name)
                          and not in_workdir(p))
        files = sorted(p for p in visible if p.suffix == ".py" and p.is_file() and p.name != "__init__.py"
                       and not in_workdir(p))
        ignored = sum(1 for p in visible if p.is_file() and p.suffix != ".py" and not in_workdir(p)
                      and p not in archives)
        if not files and not workdirs and not archives:
            raise CommandError(f"No .py files or CUDA Agent workdirs under {root}.")
        counts = {"submitted": 0, "duplicate": 0, "unknown problem": 0, "error": 0}
        verb = "would submit" if dry_run else "submitted"
        for item in workdirs + archives:
            self._workdir(root, item, who, hardware, dry_run, counts, verb)
        dry_run_seen: dict[tuple[int, str], Path] = {}  # a dry run writes nothing, so it remembers its own
        for file in files:
            rel = file.relative_to(root)
            problem, why = problem_for_path(rel)
            if problem is None:
                counts["unknown problem"] += 1
                self.stdout.write(f"unknown problem  {rel}: {why}")
                continue
            try:
                source = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                counts["error"] += 1
                self.stdout.write(f"error            {rel}: cannot read it as UTF-8 text ({exc})")
                continue
            if dry_run and (problem.pk, sha256_text(source)) in dry_run_seen:
                counts["duplicate"] += 1
                first = dry_run_seen[(problem.pk, sha256_text(source))]
                self.stdout.write(f"duplicate        {rel} -> {problem.slug}: same source as {first}")
                continue
            try:
                with transaction.atomic():
                    submission, evaluation, created = submission_create(
                        entrant=who, problem_slug=problem.slug, source=source, hardware=hardware,
                        rate_limit=False,
                    )
                    if dry_run:
                        raise Rollback
            except Rollback:
                pass
            except SubmissionError as exc:
                counts["error"] += 1
                self.stdout.write(f"error            {rel}: {exc.message}")
                continue
            if created:
                counts["submitted"] += 1
                dry_run_seen[(problem.pk, sha256_text(source))] = rel
                where = f"{problem.slug} on {submission.pool.slug}"
                self.stdout.write(f"{verb:<17}{rel} -> {where}" + ("" if dry_run else f" #{submission.pk}"))
            else:
                counts["duplicate"] += 1
                self.stdout.write(f"duplicate        {rel} -> {problem.slug}: same source as #{submission.pk} "
                                  f"(evaluation {evaluation.pk}, {evaluation.status})")
        summary = ", ".join(f"{n} {k}" for k, n in counts.items())
        if dry_run:
            summary = summary.replace("submitted", "to submit") + " (dry run: nothing was written)"
        if ignored:
            summary += f"; {ignored} non-Python file(s) ignored"
        found = f"{len(files)} file(s)" + (f", {len(workdirs) + len(archives)} workdir(s)"
                                           if workdirs or archives else "")
        self.stdout.write(f"{who.name}: {found}: {summary}")

    def _workdir(self, root: Path, item: Path, who: Entrant, hardware: str | None, dry_run: bool,
                 counts: dict[str, int], verb: str) -> None:
        """One CUDA Agent workdir (a folder or an archive): its problem from its name, else from its model.py."""
        rel = item.relative_to(root) if item != root else Path(root.name)
        name = rel.name
        for suffix in (".tar.gz", ".tgz", ".zip", ".tar"):
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
                break
        problem, _ = problem_for_path(rel.parent / f"{name}.py")
        try:
            wd = agent_workdir.read_path(item)
        except agent_workdir.WorkdirError as exc:
            counts["error"] += 1
            self.stdout.write(f"error            {rel}: the workdir is refused: {exc}")
            return
        try:
            with transaction.atomic():
                submission, evaluation, created = submission_create_from_workdir(
                    entrant=who, wd=wd, problem_slug=problem.slug if problem else None, hardware=hardware,
                    rate_limit=False)
                if dry_run:
                    raise Rollback
        except Rollback:
            counts["submitted"] += 1
            self.stdout.write(f"{verb:<17}{rel} (workdir)")
            return
        except SubmissionError as exc:
            counts["unknown problem" if exc.code == "unknown_problem" else "error"] += 1
            self.stdout.write(f"error            {rel}: {exc.message}")
            return
        where = f"{submission.problem.slug} on {submission.pool.slug}"
        if created:
            counts["submitted"] += 1
            self.stdout.write(f"{verb:<17}{rel} (workdir) -> {where} #{submission.pk}")
        else:
            counts["duplicate"] += 1
            self.stdout.write(f"duplicate        {rel} (workdir) -> {where}: same files as #{submission.pk} "
                              f"(evaluation {evaluation.pk}, {evaluation.status})")
