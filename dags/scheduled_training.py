"""Scheduled training: one run per day, each writing to its own ``output_dir``.

Every run is keyed by its logical date: the JobSet name (from dag_id, task_id and run_id)
and the output directory both are, so a retry or a cleared re-run of a day reattaches to or
replaces that day's job and overwrites that day's outputs, never another day's. Backfill
past days with ``airflow backfill create --dag-id scheduled_training --from-date ...
--to-date ...`` or from the UI.

Set the Airflow Variables ``jax_image`` and ``jax_output_root`` (say ``gs://my-bucket/runs``)
for GKE; the defaults run on the local backend.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import dag, task

# Under AIRFLOW_HOME (make demo: the project's ignored .airflow/) unless the Variable
# jax_output_root names the place (gs://my-bucket/runs on GKE).
LOCAL_OUTPUTS = os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"), "jax-outputs"
)
OUTPUT_ROOT = "{{ var.value.get('jax_output_root', '" + LOCAL_OUTPUTS + "') }}"

IMAGE = "{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}"


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,  # backfill explicitly; a new deployment should not start 100 slices at once
    max_active_runs=2,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
    tags=["jax", "example"],
)
def scheduled_training() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-8",
        image=IMAGE,
        output_dir=OUTPUT_ROOT + "/scheduled_training/{{ ds_nodash }}",
        execution_timeout=timedelta(hours=4),
    )
    def train(ds: str | None = None) -> dict[str, Any]:
        from quickstart_train import train as fit

        from airflow_provider_jax.runtime import output_dir

        return fit(steps=40) | {"ds": ds, "output_dir": output_dir()}

    @task
    def publish(result: dict[str, Any]) -> None:
        print(f"{result['ds']}: loss {result['loss']:.5f}, outputs in {result['output_dir']}")

    publish(train())


scheduled_training()
