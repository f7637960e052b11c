"""The pods' stores: the one parser of a location string (each store's naming rules, GCS's
bucket rules among them), the driver of each scheme, and reading and writing through them,
locally and through the GCS emulator."""

from __future__ import annotations

import pytest

from airflow_provider_jax.runtime import output_paths, stores
from airflow_provider_jax.runtime.stores import gcs, local, named_store, parse_location

GCS, LOCAL = gcs.SCHEME, local.SCHEME


@pytest.mark.parametrize(
    ("value", "scheme", "bucket", "key", "prefix"),
    [
        ("gs://bkt", GCS, "bkt", "", ""),
        ("gs://bkt/", GCS, "bkt", "", ""),
        ("gs://bkt/a/b", GCS, "bkt", "a/b", "a/b/"),
        ("gs://bkt/a/b/", GCS, "bkt", "a/b/", "a/b/"),
        ("gs://my.bucket_1-x/runs", GCS, "my.bucket_1-x", "runs", "runs/"),
        ("/tmp/out", LOCAL, "", "/tmp/out", "tmp/out/"),
    ],
)
def test_parts(value, scheme, bucket, key, prefix):
    where = parse_location(value)
    assert (where.scheme, where.bucket, where.key, where.prefix) == (scheme, bucket, key, prefix)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("gs:///x", "names no bucket"),
        ("gs://ab/x", "not a valid GCS bucket name"),  # too short
        ("gs://Upper/x", "not a valid GCS bucket name"),
        ("gs://goog-bucket/x", "not a valid GCS bucket name"),
        ("gs://my-google-bucket/x", "not a valid GCS bucket name"),
        (f"gs://{'a' * 64}/x", "not a valid GCS bucket name"),
        (f"gs://{'a' * 64}.b/x", "not a valid GCS bucket name"),  # a dotted part over 63
        ("s3://bucket/x", "only GCS is supported"),
        ("relative/path", "is relative"),
        ("", "must be gs://<bucket>/<path> or an absolute local path"),
        (None, "must be gs://<bucket>/<path> or an absolute local path"),
    ],
)
def test_what_is_refused_names_the_argument(value, error):
    with pytest.raises(ValueError, match=error) as raised:
        parse_location(value, "output_dir")
    assert "output_dir" in str(raised.value)


def test_the_store_a_string_names_is_read_from_its_scheme_only():
    assert named_store("gs://bkt/x") is gcs.DRIVER and named_store("gs://") is gcs.DRIVER
    assert named_store("/tmp") is local.DRIVER and named_store(None) is None
    assert named_store("s3://bucket/x") is None and named_store("file:///tmp") is None


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
