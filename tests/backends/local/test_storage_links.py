"""storage= on the local backend: a claim mapped to a local folder is at its mount path for
the run (a link, removed after it); an unmapped one fails before any process starts."""

from __future__ import annotations

import os

import pytest

from airflow_provider_jax import Storage
from airflow_provider_jax.manifest.named_storage import LOCAL_STORAGE_ENV
from tests.support.local_runs import run


def test_a_mapped_claim_is_at_its_mount_path(tmp_path, monkeypatch):
    folder = tmp_path / "filestore"
    folder.mkdir()
    (folder / "vocab.txt").write_text("a b c")
    mount = tmp_path / "mnt" / "shared"
    monkeypatch.setenv(LOCAL_STORAGE_ENV, f'{{"shared-fs": "{folder}"}}')
    result, _ = run(
        "read_dataset",
        entrypoint_kwargs={"dataset": str(mount)},
        storage=[Storage("shared-fs", str(mount), kind="filestore")],
        initialize_distributed=False,
    )
    assert result["files"] == {"vocab.txt": "a b c"}
    assert not os.path.lexists(mount)  # the link went with the run
    assert not os.path.lexists(mount.parent)  # and so did the folder made to hold it


def test_folders_that_were_there_stay(tmp_path, monkeypatch):
    folder = tmp_path / "filestore"
    folder.mkdir()
    (tmp_path / "mnt" / "a").mkdir(parents=True)
    monkeypatch.setenv(LOCAL_STORAGE_ENV, f'{{"x": "{folder}", "y": "{folder}"}}')
    run(
        "read_dataset",
        entrypoint_kwargs={"dataset": str(folder)},
        storage=[
            Storage("x", str(tmp_path / "mnt" / "a" / "new" / "x"), kind="filestore"),
            Storage("y", str(tmp_path / "mnt" / "b" / "y"), kind="filestore"),
        ],
        initialize_distributed=False,
    )
    assert sorted(os.listdir(tmp_path / "mnt")) == ["a"]  # b was made for the run
    assert os.listdir(tmp_path / "mnt" / "a") == []  # a/new too


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("{shared: /x}", "is not JSON"),
        ('["/x"]', "must be a JSON object of storage names to local folders"),
        ('{"shared": 3}', "must be a JSON object of storage names to local folders"),
    ],
)
def test_a_malformed_mapping_names_the_variable(tmp_path, monkeypatch, value, error):
    monkeypatch.setenv(LOCAL_STORAGE_ENV, value)
    with pytest.raises(ValueError, match=rf"{LOCAL_STORAGE_ENV} {error}"):
        run(
            "read_dataset",
            entrypoint_kwargs={"dataset": "/x"},
            storage=[Storage("shared", str(tmp_path / "s"), kind="filestore")],
            initialize_distributed=False,
        )


def test_an_unmapped_claim_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv(LOCAL_STORAGE_ENV, raising=False)
    with pytest.raises(ValueError, match=rf"Map it to a local folder: {LOCAL_STORAGE_ENV}="):
        run(
            "read_dataset",
            entrypoint_kwargs={"dataset": "/x"},
            storage=[Storage("lustre-claim", str(tmp_path / "l"), kind="lustre")],
            initialize_distributed=False,
        )
