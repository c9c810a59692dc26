"""The open dataset: problems, submissions and evaluations as Parquet files (docs/DATA.md).

One place decides what is public, so the command (`manage.py export_dataset`) and the API
(`GET /api/v1/dataset/`) publish the same thing:
- problems: every version of every problem, with its reference source (problems are public);
- submissions: every submission as a row (who, what, where, when, verdicts are on the leaderboards anyway),
  but `source` and `sha256` only where the source is public: its entrant publishes its sources, or the
  problem's reveal date has passed. A private source's hash is withheld too: it would confirm a guess.
- evaluations: every evaluation of those submissions with its timings. For a public source, `message` and the
  evaluator's whole object (`result_json`); for a private one no message (compiler errors, tracebacks and rule
  reports can quote the source) and only the result's keys in PRIVATE_RESULT_KEYS (timing statistics, baselines,
  device, versions, isolation): an allowlist, so a key the evaluator adds later stays private until listed.
The owner, tokens, runner secrets and moderation reasons (shown to the owner only) are never exported.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings
from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from apps.submissions.models import Evaluation, ProblemVersion, Submission

SCHEMA_VERSION = 1
TIMESTAMP = pa.timestamp("us", tz="UTC")

# (column, Arrow type, description): the single definition behind the Parquet schemas, schema.json and README.
COLUMNS: dict[str, list[tuple[str, pa.DataType, str]]] = {
    "problems": [
        ("slug", pa.string(), "Problem identifier, e.g. l1-19-relu (KernelBench level 1, problem 19)."),
        ("version", pa.int32(), "Version of the problem; a changed reference file makes a new version."),
        ("is_current", pa.bool_(), "Whether this is the version new submissions are checked against."),
        ("title", pa.string(), "Human title."),
        ("level", pa.int16(), "KernelBench level: 1 single operators, 2 fused chains, 3 whole models."),
        ("description", pa.string(), "Plain-text description."),
        ("hardware", pa.list_(pa.string()), "Hardware pools the problem is offered on (cpu, h200, ...)."),
        ("is_active", pa.bool_(), "Whether the problem still accepts submissions."),
        ("reveal_at", TIMESTAMP, "After this time every submitted source of the problem is public (null: never "
                                 "by date)."),
        ("source", pa.string(), "The reference: KernelBench format (class Model, get_inputs, get_init_inputs)."),
        ("content_hash", pa.string(), "SHA-256 of `source` (UTF-8)."),
        ("created_at", TIMESTAMP, "When this version was stored."),
    ],
    "submissions": [
        ("id", pa.int64(), "Submission id (its page is /submissions/<id>/)."),
        ("entrant", pa.string(), "Entrant name as on the leaderboard."),
        ("entrant_slug", pa.string(), "Entrant identifier."),
        ("entrant_kind", pa.string(), "agent, llm, human or baseline."),
        ("model_name", pa.string(), "Model behind the entrant, where given (e.g. an LLM's name)."),
        ("model_version", pa.string(), "Version of that model, where given."),
        ("problem_slug", pa.string(), "Problem (join problems.slug)."),
        ("problem_version", pa.int32(), "Problem version it was checked against (join problems.version)."),
        ("problem_level", pa.int16(), "The problem's KernelBench level."),
        ("hardware", pa.string(), "Hardware pool it was evaluated on."),
        ("language", pa.string(), "cpp, cuda, triton, cupy or coreml."),
        ("created_at", TIMESTAMP, "When it was submitted."),
        ("moderation", pa.string(), "ok, or hacked / invalid: such submissions are excluded from rankings."),
        ("source_public", pa.bool_(), "Whether `source` and `sha256` are published."),
        ("sha256", pa.string(), "SHA-256 of the source; null while the source is private."),
        ("source", pa.string(), "The solution (class ModelNew); null while it is private."),
    ],
    "evaluations": [
        ("id", pa.int64(), "Evaluation id; a re-run of a submission makes a new one."),
        ("submission_id", pa.int64(), "Join submissions.id."),
        ("status", pa.string(), "queued, running, done, or failed (infrastructure failure: no verdict)."),
        ("stage", pa.string(), "queued, prescreen, compiling, checking, timing or done."),
        ("verdict", pa.string(), "accepted, wrong_answer, compile_error, runtime_error, timeout or rejected; "
                                 "null until done."),
        ("correct", pa.bool_(), "Whether the outputs matched the reference."),
        ("attempt", pa.int16(), "Dispatches so far (a job lost by a runner is dispatched again)."),
        ("runtime_us", pa.float64(), "Median time of the solution in microseconds (accepted only)."),
        ("eager_us", pa.float64(), "Median time of the reference in PyTorch eager, same device and method."),
        ("compile_us", pa.float64(), "Median time of the reference under torch.compile (default mode)."),
        ("speedup_vs_eager", pa.float64(), "eager_us / runtime_us (accepted only)."),
        ("speedup_vs_compile", pa.float64(), "compile_us / runtime_us (accepted only)."),
        ("queued_at", TIMESTAMP, "When it was queued."),
        ("started_at", TIMESTAMP, "When a runner claimed it."),
        ("finished_at", TIMESTAMP, "When its result was stored."),
        ("system_info_json", pa.string(), "JSON: device, clocks and library versions the runner reported."),
        ("message", pa.string(), "Why the verdict (mismatch, compiler error, rule); null while the source is "
                                 "private, since it may quote the source."),
        ("result_json", pa.string(), "JSON: the evaluator's result (timing statistics, baselines, device, "
                                     "versions); while the source is private, only those keys."),
    ],
}
TABLES = tuple(COLUMNS)
# What of the evaluator's object is published while the source is private: numbers and the machine, nothing that
# can quote code (message, logs, checks' details) and no solution hash (it would confirm a guess of the source).
PRIVATE_RESULT_KEYS = ("verdict", "correct", "runtime_us", "eager_us", "compile_us", "speedup_vs_eager",
                       "speedup_vs_compile", "stats", "baselines", "device", "versions", "isolation", "language",
                       "seed", "problem_hash", "wall_s")
FILES = tuple(f"{name}.parquet" for name in TABLES) + ("schema.json", "README.md")


def table_schema(name: str) -> pa.Schema:
    return pa.schema([pa.field(col, typ, nullable=True, metadata={"description": desc})
                      for col, typ, desc in COLUMNS[name]])


def _json(value: Any) -> str | None:
    return json.dumps(value, sort_keys=True) if value not in (None, {}, []) else None


def _public_source_filter(now: datetime) -> Q:
    return Q(entrant__sources_public=True) | Q(problem__reveal_at__lte=now)


# --- Rows -----------------------------------------------------------------------------------------------

def problem_rows() -> Iterable[dict]:
    versions = ProblemVersion.objects.select_related("problem").prefetch_related("problem__pools") \
        .order_by("problem__slug", "version")
    for v in versions.iterator(chunk_size=500):
        p = v.problem
        yield {
            "slug": p.slug, "version": v.version, "is_current": v.version == p.version, "title": p.title,
            "level": p.level, "description": p.description, "hardware": sorted(pool.slug for pool in p.pools.all()),
            "is_active": p.is_active, "reveal_at": p.reveal_at, "source": v.source,
            "content_hash": v.content_hash, "created_at": v.created_at,
        }


def submission_rows(*, now: datetime) -> Iterable[dict]:
    public = set(Submission.objects.filter(_public_source_filter(now)).values_list("pk", flat=True))
    rows = Submission.objects.order_by("pk").values(
        "pk", "entrant__name", "entrant__slug", "entrant__kind", "entrant__model_name", "entrant__model_version",
        "problem__slug", "problem_version__version", "problem__level", "pool__slug", "language", "created_at",
        "moderation", "sha256", "source",
    )
    for r in rows.iterator(chunk_size=2000):
        is_public = r["pk"] in public
        yield {
            "id": r["pk"], "entrant": r["entrant__name"], "entrant_slug": r["entrant__slug"],
            "entrant_kind": r["entrant__kind"], "model_name": r["entrant__model_name"] or None,
            "model_version": r["entrant__model_version"] or None, "problem_slug": r["problem__slug"],
            "problem_version": r["problem_version__version"], "problem_level": r["problem__level"],
            "hardware": r["pool__slug"], "language": r["language"], "created_at": r["created_at"],
            "moderation": r["moderation"], "source_public": is_public,
            "sha256": r["sha256"] if is_public else None, "source": r["source"] if is_public else None,
        }


def evaluation_rows(*, now: datetime) -> Iterable[dict]:
    public = set(Submission.objects.filter(_public_source_filter(now)).values_list("pk", flat=True))
    rows = Evaluation.objects.order_by("pk").values(
        "pk", "submission_id", "status", "stage", "verdict", "correct", "attempt", "runtime_us", "eager_us",
        "compile_us", "speedup_vs_eager", "speedup_vs_compile", "queued_at", "started_at", "finished_at",
        "system_info", "message", "result",
    )
    for r in rows.iterator(chunk_size=2000):
        is_public = r["submission_id"] in public
        yield {
            "id": r["pk"], "submission_id": r["submission_id"], "status": r["status"], "stage": r["stage"],
            "verdict": r["verdict"] or None, "correct": r["correct"], "attempt": r["attempt"],
            "runtime_us": r["runtime_us"], "eager_us": r["eager_us"], "compile_us": r["compile_us"],
            "speedup_vs_eager": r["speedup_vs_eager"], "speedup_vs_compile": r["speedup_vs_compile"],
            "queued_at": r["queued_at"], "started_at": r["started_at"], "finished_at": r["finished_at"],
            "system_info_json": _json(r["system_info"]),
            "message": (r["message"] or None) if is_public else None,
            "result_json": _json(r["result"] if is_public else
                                 {k: v for k, v in (r["result"] or {}).items() if k in PRIVATE_RESULT_KEYS}),
        }


# --- Files ----------------------------------------------------------------------------------------------

ROWS_PER_GROUP = 5000  # rows held in memory at once: sources can be 256 KiB each


def _write_parquet(name: str, rows: Iterable[dict], path: Path) -> int:
    """Streams rows into a Parquet file a row group at a time; returns the row count."""
    schema = table_schema(name)
    count = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        batch: list[dict] = []
        for row in rows:
            batch.append(row)
            if len(batch) == ROWS_PER_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                count += len(batch)
                batch = []
        if batch or count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            count += len(batch)
    return count


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dataset_export(*, out_dir: Path) -> dict:
    """Writes the three Parquet files, schema.json and README.md into `out_dir`; returns the manifest."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    now = timezone.now()
    sources = {"problems": problem_rows(), "submissions": submission_rows(now=now),
               "evaluations": evaluation_rows(now=now)}
    tables: dict[str, dict] = {}
    for name, rows in sources.items():
        path = out_dir / f"{name}.parquet"
        count = _write_parquet(name, rows, path)
        tables[name] = {"file": path.name, "rows": count, "bytes": path.stat().st_size,
                        "sha256": _sha256_file(path)}
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": now.isoformat(),
        "tables": {
            name: {**info, "columns": [{"name": col, "type": str(typ), "nullable": True, "description": desc}
                                       for col, typ, desc in COLUMNS[name]]}
            for name, info in tables.items()
        },
    }
    (out_dir / "schema.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (out_dir / "README.md").write_text(_readme(manifest))
    return manifest


def _readme(manifest: dict) -> str:
    lines = [
        "# KernelHub open dataset",
        "",
        f"Exported {manifest['generated_at']} (schema version {manifest['schema_version']}). "
        "Parquet files, zstd-compressed; read them with pyarrow, pandas, polars or DuckDB:",
        "",
        "```python",
        "import pandas as pd",
        "subs = pd.read_parquet('submissions.parquet')",
        "evals = pd.read_parquet('evaluations.parquet').merge(subs, left_on='submission_id', right_on='id')",
        "```",
        "",
        "What is public: every problem version with its reference source; every submission's entrant, problem, "
        "hardware, language and time, but its `source` and `sha256` only where its entrant publishes its "
        "sources or the problem's reveal date has passed (`source_public`); every evaluation's status, verdict "
        "and timings; `message` only for public sources, and `result_json` whole for public sources, reduced "
        "to timing statistics, baselines, device and versions for private ones (compiler errors quote the "
        "source). Submissions moderated as `hacked` or `invalid` are kept for study and excluded from the "
        "rankings. Times are microseconds; timestamps UTC.",
        "",
    ]
    for table in manifest["tables"].values():
        lines += [f"## {table['file']} ({table['rows']} rows)", "", "| column | type | description |",
                  "|---|---|---|"]
        lines += [f"| `{c['name']}` | {c['type']} | {c['description']} |" for c in table["columns"]]
        lines.append("")
    return "\n".join(lines)


# --- The copy the API serves ---------------------------------------------------------------------------

EXPORT_LOCK_KEY = "dataset-export-running"
EXPORT_LOCK_S = 600  # an export that takes longer than this has died; let another one start


def _cache_root() -> Path:
    return Path(settings.VAR_DIR) / "dataset"


def dataset_latest(*, max_age_s: float) -> tuple[Path, dict]:
    """The directory and manifest of an export at most `max_age_s` old, exporting a new one if needed.

    Each export goes to a directory of its own and counts once its schema.json exists (written last), so a
    download never sees a half-written file; two concurrent rebuilds just make two complete copies.
    """
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    complete = sorted((d for d in root.iterdir() if (d / "schema.json").exists()), reverse=True)
    if complete and time.time() - (complete[0] / "schema.json").stat().st_mtime <= max_age_s:
        return complete[0], json.loads((complete[0] / "schema.json").read_text())
    # One export at a time across every web worker; the others serve the stale copy meanwhile.
    if not cache.add(EXPORT_LOCK_KEY, "1", timeout=EXPORT_LOCK_S) and complete:
        return complete[0], json.loads((complete[0] / "schema.json").read_text())
    out_dir = root / f"{timezone.now():%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}"
    try:
        manifest = dataset_export(out_dir=out_dir)
    finally:
        cache.delete(EXPORT_LOCK_KEY)
    # Keep the previous copy: a download of it may still be streaming. Unfinished ones older than an hour died.
    for old in complete[1:]:
        shutil.rmtree(old, ignore_errors=True)
    for d in root.iterdir():
        if not (d / "schema.json").exists() and d != out_dir and time.time() - d.stat().st_mtime > 3600:
            shutil.rmtree(d, ignore_errors=True)
    return out_dir, manifest
