"""The export streams rows in row groups (sources can be large), and writes valid empty tables."""

from io import StringIO

import pyarrow.parquet as pq
from django.core.management import call_command

from apps.submissions import datasets


def test_it_writes_many_row_groups_and_empty_tables(published_world, tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "ROWS_PER_GROUP", 3)
    call_command("export_dataset", str(tmp_path / "out"), stdout=StringIO())
    meta = pq.read_metadata(tmp_path / "out" / "submissions.parquet")
    assert (meta.num_rows, meta.num_row_groups) == (4, 2)
    ids = pq.read_table(tmp_path / "out" / "submissions.parquet").column("id").to_pylist()
    assert ids == sorted(ids) and len(set(ids)) == 4


def test_it_exports_an_empty_site(db, tmp_path):
    call_command("export_dataset", str(tmp_path), stdout=StringIO())
    for name in ("problems", "submissions", "evaluations"):
        table = pq.read_table(tmp_path / f"{name}.parquet")
        assert table.num_rows == 0
        assert table.schema.names == [c[0] for c in datasets.COLUMNS[name]]
