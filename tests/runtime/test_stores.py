from __future__ import annotations

import pytest

from airflow_provider_jax.runtime import output_paths, stores


def test_local_round_trip(tmp_path):
    uri = output_paths.join(str(tmp_path / "a" / "b") + "/", "result.json")
    stores.write_text(uri, '{"x": 1}')
    assert stores.read_text(uri) == '{"x": 1}'
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["result.json"]


def test_gcs_round_trip(gcs_bucket):
    uri = f"gs://{gcs_bucket}/dir with space/é/result.json"
    stores.write_text(uri, '{"loss": 0.5}')
    assert stores.read_text(uri) == '{"loss": 0.5}'
    stores.write_text(uri, "[]")  # overwrite
    assert stores.read_text(uri) == "[]"


def test_gcs_errors_are_clear(gcs_bucket):
    with pytest.raises(RuntimeError, match="HTTP 404"):
        stores.read_text(f"gs://{gcs_bucket}/missing.json")
    with pytest.raises(ValueError, match="not a gs://bucket/object URI"):
        stores.read_text("gs://bucket-only")


def test_no_metadata_server_is_explained(monkeypatch):
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # nothing listens there
    with pytest.raises(RuntimeError, match="metadata server .* use a local output_dir"):
        stores.write_text("gs://bucket/result.json", "{}")
