"""The one parser of a location string: GCS's bucket rules, absolute local paths, and the
parts every store driver and path helper builds on."""

from __future__ import annotations

import pytest

from airflow_provider_jax.runtime.location import GCS, LOCAL, Location


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
    where = Location.parse(value)
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
        Location.parse(value, "output_dir")
    assert "output_dir" in str(raised.value)


@pytest.mark.parametrize(
    ("value", "joined", "parent"),
    [
        ("gs://bkt", "gs://bkt/a/b.json", "gs://bkt"),
        ("gs://bkt/run/", "gs://bkt/run/a/b.json", "gs://bkt"),
        ("gs://bkt/x/run", "gs://bkt/x/run/a/b.json", "gs://bkt/x"),
        ("/tmp/run/", "/tmp/run/a/b.json", "/tmp"),
        ("/run", "/run/a/b.json", "/"),
    ],
)
def test_join_parent_and_str(value, joined, parent):
    where = Location.parse(value)
    assert str(where.join("a", "b.json")) == joined
    assert str(where.parent) == parent
    assert where.join("a", "b.json").name == "b.json"
    assert Location.parse(joined) == where.join("a", "b.json")


def test_is_gcs_uri_reads_only_the_scheme():
    assert Location.is_gcs_uri("gs://bkt/x") and Location.is_gcs_uri("gs://")
    assert not Location.is_gcs_uri("/tmp") and not Location.is_gcs_uri(None)
