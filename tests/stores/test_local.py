"""The Airflow side's driver of this host's files: what the GCS driver does through its hooks,
done with the file system (the result's refusals are in ``tests/backends/test_result.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_jax.runtime.stores import parse_location
from airflow_provider_jax.stores import store


def test_it_writes_uploads_and_finds_files(tmp_path: Path) -> None:
    where = parse_location(str(tmp_path / "run"))
    driver = store(where)
    assert not driver.exists(where)
    driver.write(where.join("a", "marker"), b"done")
    (tmp_path / "shard.csv").write_text("1,2\n")
    driver.upload(where.join("b", "shard.csv"), tmp_path / "shard.csv")
    assert driver.exists(where) and driver.exists(where.join("a", "marker"))
    assert (tmp_path / "run" / "b" / "shard.csv").read_text() == "1,2\n"
    assert driver.holds_file_named(where, "shard", most=10)
    assert not driver.holds_file_named(where, "events.out.tfevents.", most=10)


def test_a_read_is_capped_and_refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text("[1, 2, 3]")
    (tmp_path / "secret").write_text("s3cr3t")
    (tmp_path / "link.json").symlink_to(tmp_path / "secret")
    sizes: list[int] = []
    where = parse_location(str(tmp_path / "result.json"))
    assert store(where).read(where, 4, sizes.append) == b"[1, 2"  # the cap and one byte more
    assert sizes == [9]
    link = parse_location(str(tmp_path / "link.json"))
    with pytest.raises(ValueError, match="cannot be read as a plain file"):
        store(link).read(link, 100, sizes.append)
    with pytest.raises(FileNotFoundError):
        store(where.parent.join("none.json")).read(where.parent.join("none.json"), 9, sizes.append)


def test_its_names_are_the_path() -> None:
    where = parse_location("/data/run 1/checkpoints/")
    assert store(where).browser_url(where) == "file:///data/run%201/checkpoints/"
    assert store(where).dataset(where) == ("file", "/data/run 1/checkpoints")
