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


def test_an_unmapped_claim_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv(LOCAL_STORAGE_ENV, raising=False)
    with pytest.raises(ValueError, match=rf"Map it to a local folder: {LOCAL_STORAGE_ENV}="):
        run(
            "read_dataset",
            entrypoint_kwargs={"dataset": "/x"},
            storage=[Storage("lustre-claim", str(tmp_path / "l"), kind="lustre")],
            initialize_distributed=False,
        )
