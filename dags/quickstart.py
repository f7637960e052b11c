"""Quickstart: train a tiny model on a two-host TPU slice, then log the leader's result.

With ``AIRFLOW__JAX__DEFAULT_BACKEND=local`` (what ``make demo`` sets) the slice is simulated:
2 local processes with 4 CPU devices each. On GKE the same file submits a JobSet to a
v5e 2x4 slice; its pods run the ``image`` param, which must contain ``quickstart_train.py``
(trigger it with ``{"image": ...}`` for another, such as the runtime image ``make cluster``
prints).
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, Param, task

from airflow_provider_jax.operators import JaxTpuSliceOperator

with DAG(
    dag_id="quickstart",
    schedule=None,
    start_date=pendulum.datetime(2025, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "steps": Param(60, type="integer", minimum=1, maximum=10_000),
        "image": Param("us-docker.pkg.dev/my-project/training/quickstart:latest", type="string"),
    },
    render_template_as_native_obj=True,  # "{{ params.steps }}" renders to an int
    tags=["jax", "example"],
):
    train = JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",  # 2 hosts x 4 chips, as GKE pools run it
        image="{{ params.image }}",  # what the pods run on Kubernetes; ignored locally
        entrypoint="quickstart_train:train",
        entrypoint_kwargs={"steps": "{{ params.steps }}"},  # make demo CONF='{"steps": 100}'
        total_steps="{{ params.steps }}",  # the log shows step 30/60 (50%) · steps/s · ETA
    )

    @task
    def show(result: dict[str, Any]) -> None:
        print(
            f"QUICKSTART RESULT: loss={result['loss']:.5f} at step {result['step']} "
            f"({result['processes']} processes, {result['devices']} devices)"
        )

    show(train.output)
