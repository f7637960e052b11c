"""A location's parts and the paths built on them, which every store driver and path helper
uses."""

from __future__ import annotations

import pytest

from airflow_provider_jax.runtime.stores import parse_location


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
    where = parse_location(value)
    assert str(where.join("a", "b.json")) == joined
    assert str(where.parent) == parent
    assert where.join("a", "b.json").name == "b.json"
    assert parse_location(joined) == where.join("a", "b.json")
