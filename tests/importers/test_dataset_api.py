"""GET /api/v1/dataset/ lists the open dataset's files; each one downloads; the export is reused while fresh."""

import io
import json

import pyarrow.parquet as pq


def test_it_serves_the_index_and_each_file(published_world, client, settings, tmp_path, embedded_redis):
    settings.VAR_DIR = tmp_path
    index = client.get("/api/v1/dataset/")
    assert index.status_code == 200
    body = index.json()
    names = {f["name"]: f for f in body["files"]}
    assert set(names) == {"problems.parquet", "submissions.parquet", "evaluations.parquet"}
    assert names["submissions.parquet"]["rows"] == 4
    assert names["submissions.parquet"]["url"] == "http://testserver/api/v1/dataset/submissions.parquet"

    download = client.get("/api/v1/dataset/submissions.parquet")
    assert download.status_code == 200
    assert download["Content-Type"] == "application/vnd.apache.parquet"
    assert "attachment" in download["Content-Disposition"]
    data = b"".join(download.streaming_content)
    assert len(data) == names["submissions.parquet"]["bytes"]
    table = pq.read_table(io.BytesIO(data)).to_pylist()
    private = next(r for r in table if r["id"] == published_world["private"].pk)
    assert private["source"] is None

    schema = client.get("/api/v1/dataset/schema.json")
    assert json.loads(b"".join(schema.streaming_content))["tables"]["evaluations"]["rows"] == 4
    readme = client.get("/api/v1/dataset/README.md")
    assert b"# KernelHub open dataset" in b"".join(readme.streaming_content)


def test_it_answers_404_for_other_names(db, client, settings, tmp_path, embedded_redis):
    settings.VAR_DIR = tmp_path
    response = client.get("/api/v1/dataset/secrets.parquet")
    assert response.status_code == 404
    assert "GET /api/v1/dataset/ lists them" in response.json()["error"]["message"]
    assert client.get("/api/v1/dataset/..%2Fkernelhub.sqlite3").status_code == 404


def test_it_reuses_a_fresh_export_and_rebuilds_a_stale_one(published_world, client, settings, tmp_path,
                                                             embedded_redis):
    settings.VAR_DIR = tmp_path
    settings.DATASET_MAX_AGE_S = 3600
    first = client.get("/api/v1/dataset/").json()
    published_world["public"].delete()
    assert client.get("/api/v1/dataset/").json()["generated_at"] == first["generated_at"]
    settings.DATASET_MAX_AGE_S = 0
    rebuilt = client.get("/api/v1/dataset/").json()
    assert rebuilt["generated_at"] != first["generated_at"]
    assert {f["name"]: f["rows"] for f in rebuilt["files"]}["submissions.parquet"] == 3
    # Only the newest exports are kept on disk.
    assert len(list((tmp_path / "dataset").iterdir())) <= 2


def test_it_serves_the_stale_copy_while_another_worker_exports(published_world, client, settings, tmp_path,
                                                               embedded_redis):
    from django.core.cache import cache

    from apps.submissions.datasets import EXPORT_LOCK_KEY

    settings.VAR_DIR = tmp_path
    first = client.get("/api/v1/dataset/").json()
    settings.DATASET_MAX_AGE_S = 0
    assert cache.add(EXPORT_LOCK_KEY, "1", timeout=60)  # another worker is exporting
    try:
        assert client.get("/api/v1/dataset/").json()["generated_at"] == first["generated_at"]
    finally:
        cache.delete(EXPORT_LOCK_KEY)
    assert client.get("/api/v1/dataset/").json()["generated_at"] != first["generated_at"]
