"""Data inputs on the local backend: a gs:// prefix (the GCS emulator, through
``STORAGE_EMULATOR_HOST``) reaches the function on every host as a local folder, as on GKE."""

from __future__ import annotations

from airflow_provider_jax import Data
from airflow_provider_jax.runtime import stores
from tests.support.local_runs import run


def test_every_host_gets_the_gcs_data_set_as_a_path(gcs_emulator, gcs_bucket):
    for name, text in {"ds/a.csv": "1,2\n", "ds/sub/b.csv": "3,4\n"}.items():
        stores.write_text(f"gs://{gcs_bucket}/{name}", text)
    result, _ = run(
        "read_dataset",
        entrypoint_kwargs={"dataset": Data(f"gs://{gcs_bucket}/ds/", fuse=True)},
        initialize_distributed=False,
    )
    assert result == {"host": 0, "files": {"a.csv": "1,2\n", "sub/b.csv": "3,4\n"}}
