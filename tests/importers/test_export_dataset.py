"""export_dataset writes problems, submissions and evaluations as Parquet, publishing only public sources."""

import json
from io import StringIO

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from tests.importers.conftest import problem_source, solution_source


def rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_it_writes_the_three_tables_with_only_public_sources(published_world, suite, tmp_path):
    # A second version of one problem: both versions are exported, so old submissions can be re-checked.
    (suite / "KernelBench" / "level1" / "19_ReLU.py").write_text(problem_source("relu", " + 1"))
    call_command("import_kernelbench", str(suite), stdout=StringIO(), stderr=StringIO())

    out_dir = tmp_path / "export"
    out = StringIO()
    call_command("export_dataset", str(out_dir), stdout=out)
    assert "submissions.parquet: 4 rows" in out.getvalue()

    problems = rows(out_dir / "problems.parquet")
    relu = sorted((p for p in problems if p["slug"] == "l1-19-relu"), key=lambda p: p["version"])
    assert [(p["version"], p["is_current"]) for p in relu] == [(1, False), (2, True)]
    assert "+ 1" in relu[1]["source"] and "+ 1" not in relu[0]["source"]
    assert relu[0]["hardware"] == ["h200"] and relu[0]["title"] == "ReLU" and relu[0]["level"] == 1
    assert len(problems) == 6  # 5 problems, one of them in two versions

    subs = {s["id"]: s for s in rows(out_dir / "submissions.parquet")}
    public = subs[published_world["public"].pk]
    assert public["source"] == solution_source(1) and public["source_public"] is True
    assert public["sha256"] == published_world["public"].sha256 and public["entrant"] == "Open Agent"
    private = subs[published_world["private"].pk]
    assert private["source"] is None and private["sha256"] is None and private["source_public"] is False
    assert (private["entrant"], private["entrant_kind"], private["model_name"], private["model_version"]) == \
        ("Closed LLM", "llm", "closed-1", "2026-11")
    assert private["problem_slug"] == "l1-19-relu" and private["problem_version"] == 1
    assert private["hardware"] == "h200" and private["language"] == "cpp" and private["moderation"] == "ok"
    assert subs[published_world["revealed"].pk]["source"] == solution_source(3)  # reveal date passed
    assert subs[published_world["not_yet"].pk]["source"] is None  # reveal date still ahead

    evals = {e["submission_id"]: e for e in rows(out_dir / "evaluations.parquet")}
    assert len(evals) == 4
    e_public = evals[published_world["public"].pk]
    assert e_public["verdict"] == "accepted" and e_public["runtime_us"] == 10.0
    assert e_public["speedup_vs_eager"] == 10.0 and e_public["eager_us"] == 100.0
    assert json.loads(e_public["result_json"])["solution_hash"] == "hash1"
    assert json.loads(e_public["system_info_json"]) == {"device_name": "NVIDIA H200"}
    e_private = evals[published_world["private"].pk]
    assert e_private["verdict"] == "compile_error" and e_private["correct"] is False
    # The compiler's message and the evaluator's other keys may quote the private source: withheld; the
    # timing statistics are kept.
    assert e_private["message"] is None
    assert json.loads(e_private["result_json"]) == {"verdict": "accepted", "stats": {"n": 50, "std_us": 0.1}}
    assert evals[published_world["not_yet"].pk]["message"] is None
    # Nothing of the private sources anywhere: not the code, not the hash, not the log quoting it.
    everything = json.dumps([rows(p) for p in sorted(out_dir.glob("*.parquet"))], default=str)
    everything += (out_dir / "schema.json").read_text() + (out_dir / "README.md").read_text()
    assert "clamp_min(1)" in everything  # the public one is there, so the search below can find things
    for variant in (2, 4):
        assert f"clamp_min({variant})" not in everything and f"hash{variant}" not in everything
        assert published_world["private" if variant == 2 else "not_yet"].sha256 not in everything


def test_it_describes_every_column_in_schema_json_readme_and_parquet(published_world, tmp_path):
    call_command("export_dataset", str(tmp_path), stdout=StringIO())
    schema = json.loads((tmp_path / "schema.json").read_text())
    readme = (tmp_path / "README.md").read_text()
    for name in ("problems", "submissions", "evaluations"):
        table = schema["tables"][name]
        parquet_schema = pq.read_schema(tmp_path / table["file"])
        assert [c["name"] for c in table["columns"]] == parquet_schema.names
        assert table["rows"] == pq.read_metadata(tmp_path / table["file"]).num_rows
        for column in table["columns"]:
            assert column["description"]
            assert parquet_schema.field(column["name"]).metadata[b"description"] == column["description"].encode()
            assert f"| `{column['name']}` |" in readme
    assert schema["tables"]["submissions"]["rows"] == 4


def test_it_refuses_a_file_as_the_output_directory(db, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("")
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("export_dataset", str(target), stdout=StringIO())
