"""Elastic slices: a 2-slice job that goes on with one slice when the other is lost, and grows
back when its capacity returns (``min_slices``, docs/elastic.md).

The training code (``elastic_train.py``) builds its mesh from ``jax.devices()``, holds its
global batch constant and resumes from the newest checkpoint in ``output_dir``, so it runs at
any size. On GKE a slice whose pods wait for nodes is a lost slice (docs/elastic.md); locally,
``[jax] local_capacity_file`` takes a slice's capacity away and gives it back
(``{"slices": 1}``, then ``{"slices": 2}``); without it, the job runs on both slices.
"""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import dag, task

from airflow_provider_jax.operators import JaxTpuSliceOperator

# Under AIRFLOW_HOME (make demo: the project's ignored .airflow/) unless the Variable
# jax_output_root names the place (gs://my-bucket/runs on GKE).
LOCAL_OUTPUTS = os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"), "jax-outputs"
)
OUTPUT_ROOT = "{{ var.value.get('jax_output_root', '" + LOCAL_OUTPUTS + "') }}"


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def elastic_training() -> None:
    train = JaxTpuSliceOperator(
        task_id="train",
        accelerator="tpu-v5litepod-8",  # two 4-chip VMs per slice
        num_slices=2,
        min_slices=1,  # go on with one slice when the other's capacity is lost ...
        shrink_after=120,  # ... for two minutes
        image="{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}",
        output_dir=OUTPUT_ROOT + "/elastic/{{ run_id | replace(':', '-') | replace('+', '-') }}",
        entrypoint="elastic_train:train",
        entrypoint_kwargs={"steps": 40, "checkpoint_every": 10},
    )

    @task
    def show(result: dict) -> None:
        print(
            f"elastic: {result['slices']} slices at the end, {result['devices']} devices, "
            f"loss {result['loss']:.3g}"
        )

    show(train.output)


elastic_training()
