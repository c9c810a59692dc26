"""Published figures (data/reported/*.csv), shown beside what this site measured. Never mixed with ours."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

CUDA_AGENT_TABLE = "cuda_agent_kernelbench_table1.csv"


@dataclass
class ReportedTable:
    notes: list[str] = field(default_factory=list)  # the file's '#' lines: source, benchmark, caveats
    rows: list[dict[str, str]] = field(default_factory=list)


def reported_table(name: str = CUDA_AGENT_TABLE) -> ReportedTable:
    """Reads a reported-results CSV: '#' comment lines first, then a header row. Raises FileNotFoundError."""
    path = Path(settings.REPORTED_RESULTS_DIR) / name
    table = ReportedTable()
    data_lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            table.notes.append(line.lstrip("#").strip())
        elif line.strip():
            data_lines.append(line)
    table.rows = list(csv.DictReader(data_lines))
    return table
