"""Data inputs in the pod, against the GCS emulator: a gs:// prefix is downloaded whole
before the function starts, a FUSE input without a mount (the local backend) is downloaded
too, and a bucket the pod may not read names the bucket and the identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_jax.runtime import data_paths, stores
from airflow_provider_jax.runtime.data_paths import MARKER


def upload(bucket: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        stores.write_text(f"gs://{bucket}/{name}", text)


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return tmp_path


def test_a_prefix_is_downloaded_whole(gcs_emulator, gcs_bucket, tmpdir_env, capsys):
    files = {f"ds/part-{i}.txt": f"{i}," * (500 + i) for i in range(40)}
    files["ds/nested/labels.csv"] = "a,b\n1,2\n"
    files["dsx/other"] = "not under ds/"
    upload(gcs_bucket, files)
    args = {"data": {MARKER: {"uri": f"gs://{gcs_bucket}/ds/", "mount": None}}, "lr": 0.1}

    resolved = data_paths.resolve(args)

    root = Path(resolved["data"])
    assert resolved["lr"] == 0.1 and root.is_relative_to(tmpdir_env)
    got = {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}
    assert got == {
        name.removeprefix("ds/"): body for name, body in files.items() if name.startswith("ds/")
    }
    line = capsys.readouterr().out
    assert f"Data gs://{gcs_bucket}/ds/: 41 object(s), 0.1 MiB downloaded in" in line


def test_fuse_without_a_mount_is_downloaded(gcs_emulator, gcs_bucket, tmpdir_env, capsys):
    upload(gcs_bucket, {"big/x": "x"})
    marker = {MARKER: {"uri": f"gs://{gcs_bucket}/big/", "mount": "/mnt/airflow-jax-data/none"}}
    path = data_paths.resolve([marker])[0]
    assert Path(path, "x").read_bytes() == b"x"
    assert "no GCS FUSE mount here: downloaded instead" in capsys.readouterr().out


def test_a_mounted_fuse_input_is_its_mount(tmp_path):
    marker = {MARKER: {"uri": "gs://bkt/big/", "mount": str(tmp_path)}}
    assert data_paths.resolve(marker) == str(tmp_path)


def test_errors_name_the_data_set(gcs_emulator, gcs_bucket, tmpdir_env):
    with pytest.raises(FileNotFoundError, match="no objects under it"):
        data_paths.resolve({MARKER: {"uri": f"gs://{gcs_bucket}/missing/", "mount": None}})
    gcs_emulator.fail_next(403)
    with pytest.raises(PermissionError, match=rf"may not list gs://{gcs_bucket}; grant it"):
        data_paths.resolve({MARKER: {"uri": f"gs://{gcs_bucket}/ds/", "mount": None}})
    with pytest.raises(FileNotFoundError, match="no such file or folder on this host"):
        data_paths.resolve({MARKER: {"uri": "/nowhere/at/all", "mount": None}})
