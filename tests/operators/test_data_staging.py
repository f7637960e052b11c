"""A local Data folder on its way to GKE, against the GCS emulator: uploaded once to a place
named by its contents (again only when they change), with progress in the log, and
downloaded by the pods' runtime exactly as it was."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from airflow_provider_jax import Data
from airflow_provider_jax.operators import JaxTpuSliceOperator, data_staging
from airflow_provider_jax.runtime import data_paths
from airflow_provider_jax.runtime.data_paths import MARKER

LOG = logging.getLogger("tests.staging")


def dataset(root: Path) -> Path:
    (root / "nested").mkdir(parents=True)
    for i in range(12):
        (root / f"shard-{i}.csv").write_text(f"{i},{i * i}\n" * 200)
    (root / "nested" / "labels.txt").write_text("a\nb\n")
    return root


def operator(data: Data, bucket: str) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id="t",
        accelerator="tpu-v6e-16",
        image="img",
        entrypoint="m:f",
        entrypoint_kwargs={"d": data},
        output_dir=f"gs://{bucket}/runs/1",
        backend="kubernetes",
    )


def test_uploaded_once_by_content_and_read_back_whole(gcs_emulator, gcs_bucket, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger=LOG.name)
    data = Data(str(dataset(tmp_path / "ds")))
    op = operator(data, gcs_bucket)
    op.build_spec(name="x")  # as execute() does once the templates are rendered
    assert data.staged.startswith(f"gs://{gcs_bucket}/airflow-jax-data/")

    data_staging.upload([data], "google_cloud_default", None, LOG)
    data_staging.upload([data], "google_cloud_default", None, LOG)  # a retry, another run

    assert sum("Uploading Data(" in m and "13 file(s)" in m for m in caplog.messages) == 1
    assert any(re.match(r"Uploading Data\(.*\): [\d.]+ of [\d.]+ MiB$", m) for m in caplog.messages)
    assert any("not uploaded again" in m for m in caplog.messages)
    pod_view = Path(data_paths.resolve({MARKER: {"uri": data.staged, "mount": None}}))
    original = tmp_path / "ds"
    assert {
        str(p.relative_to(pod_view)): p.read_text() for p in pod_view.rglob("*") if p.is_file()
    } == {str(p.relative_to(original)): p.read_text() for p in original.rglob("*") if p.is_file()}

    (original / "shard-0.csv").write_text("changed\n")
    changed = Data(str(original))
    operator(changed, gcs_bucket).build_spec(name="x")
    assert changed.staged != data.staged  # new contents, new place


def test_too_large_or_without_a_bucket_is_refused_before_anything_runs(
    gcs_bucket, tmp_path, monkeypatch
):
    data = Data(str(dataset(tmp_path / "ds")))
    monkeypatch.setattr(data_staging, "MAX_STAGED_BYTES", 1000)
    with pytest.raises(ValueError, match=r"up to 0 GiB. Put larger data sets in GCS"):
        operator(data, gcs_bucket).build_spec(name="x")
    op = JaxTpuSliceOperator(
        task_id="t", accelerator="tpu-v6e-16", image="img", entrypoint="m:f",
        entrypoint_kwargs={"d": data}, output_dir="/local/out", backend="kubernetes",
    )  # fmt: skip
    with pytest.raises(
        ValueError, match="uploaded to the bucket of output_dir, which must be gs://"
    ):
        op.build_spec(name="x")
