"""The profile and debug-dump links: TensorBoard/XProf or the bucket browser for GCS, the path
locally, each for the try's own folder; and for real, from a DAG run's task instance."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from airflow_provider_jax.links.diagnostics import (
    DebugDumpLink,
    ProfileLink,
    folder_url,
    profile_url,
)
from tests.support.xcoms import xcoms

TEMPLATE = "https://xprof.example.com/?logdir={output_dir}"


def test_a_gcs_profile_opens_in_the_configured_tensorboard_else_the_bucket_browser():
    folder = "gs://ml-runs/nightly/profiles/try-2"
    assert profile_url(TEMPLATE, folder) == TEMPLATE.format(output_dir=quote(folder, safe=""))
    assert profile_url("", folder) == (
        "https://console.cloud.google.com/storage/browser/ml-runs/nightly/profiles/try-2/"
    )


def test_a_local_folder_is_its_path():
    assert profile_url(TEMPLATE, "/data/runs/profiles/try-1") == "file:///data/runs/profiles/try-1"
    assert folder_url("/data/runs/debug/try-1") == "file:///data/runs/debug/try-1"


DAG_FILE = """
from airflow.sdk import DAG, task

with DAG("diagnostics_links", schedule=None):

    @task.jax_tpu(
        accelerator="tpu-v5litepod-8",
        output_dir="{output_dir}",
        profile_steps=(1, 2),
        debug_dump=True,
    )
    def train(steps: int = 4) -> int:
        import jax
        import jax.numpy as jnp

        from airflow_provider_jax.runtime import report

        step = jax.jit(lambda x: (x * x).sum())
        for i in range(steps):
            report(step=i, loss=step(jnp.ones(8) * i))
        return steps

    train()
"""


@pytest.mark.slow  # a real DAG run, then the links read as the UI reads them
def test_a_dag_run_links_its_tries_profile_and_dump(airflow_home, tmp_path):
    dags, output_dir = tmp_path / "dags", tmp_path / "out"
    dags.mkdir()
    (dags / "diagnostics_links.py").write_text(DAG_FILE.format(output_dir=output_dir))
    run = airflow_home.airflow(
        "dags",
        "test",
        "diagnostics_links",
        dags_folder=dags,
        env={"AIRFLOW__JAX__DEFAULT_BACKEND": "local"},
    )
    assert run.returncode == 0, run.stdout[-4000:]
    db = airflow_home.path / "airflow.db"
    profile = xcoms(db, "diagnostics_links", "train", ProfileLink().xcom_key)
    dump = xcoms(db, "diagnostics_links", "train", DebugDumpLink().xcom_key)
    assert list(profile.values()) == [f"file://{output_dir}/profiles/try-1"]
    assert list(dump.values()) == [f"file://{output_dir}/debug/try-1"]
    host = output_dir / "profiles" / "try-1" / "host-0"
    assert len(list(host.glob("plugins/profile/*/*.xplane.pb"))) == 1
    assert (output_dir / "debug" / "try-1" / "host-0" / "log-tail.txt").exists()
