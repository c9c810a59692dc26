"""What the devices app announces to, and asks of, the apps that depend on it (it imports none of them).

runner_disabled(runner, reason): an admin disabled the runner; its running jobs must go back to the queue. A
receiver returns how many jobs it moved (apps/submissions/lifecycle.py connects one).

running_jobs(runner_ids): what each runner is running, for the hardware pages. The app that owns the jobs
registers its reader (set_running_jobs_reader; apps/submissions does, from its ready()); with none registered a
runner runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.dispatch import Signal

runner_disabled = Signal()


@dataclass(frozen=True)
class RunningJob:
    evaluation_id: int
    submission_id: int
    problem: str  # the problem's slug
    stage: str
    attempt: int


_reader: Callable[[list[int]], dict[int, list[RunningJob]]] | None = None


def set_running_jobs_reader(reader: Callable[[list[int]], dict[int, list[RunningJob]]]) -> None:
    global _reader
    _reader = reader


def running_jobs(runner_ids: list[int]) -> dict[int, list[RunningJob]]:
    """runner id -> its running jobs, oldest first."""
    return _reader(runner_ids) if _reader is not None else {}
