"""Elastic slices on real local jobs (``tests/operators/test_elastic.py``): a 2-slice job whose
second slice loses its capacity midway (``[jax] local_capacity_file``), with and without
``min_slices``. The training code is the example's (``dags/elastic_train.py``)."""

from __future__ import annotations

import os
from typing import Any

from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator

STEPS, CHECKPOINT_EVERY = 60, 5
# A step is about 0.1 s of "compute" on both slices (16 rows a device), twice that on one.
TRAIN = {"steps": STEPS, "checkpoint_every": CHECKPOINT_EVERY, "row_seconds": 0.1 / 16,
         "drill": True}  # fmt: skip


def job(task_id: str, **kwargs: Any) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id=task_id,
        accelerator="tpu-v5litepod-8",
        num_slices=2,
        backend="local",
        output_dir=f"{os.environ['JAX_TEST_OUT']}/{task_id}",
        entrypoint="tests.support.programs:elastic_train",
        entrypoint_kwargs=TRAIN,
        max_restarts=3,
        **kwargs,
    )


with DAG("jax_elastic", schedule=None, catchup=False):
    job("elastic", min_slices=1, shrink_after=2)

with DAG("jax_fixed_size", schedule=None, catchup=False):
    job("fixed")
