"""Elastic slices on the real control plane (``test_elastic.py``): a 2-slice job on the two
v5e pools whose second pool's nodes go away midway and come back; deferred, and waiting in the
worker, and without ``min_slices`` (it waits for the pool). The training code is the example's (``dags/elastic_train.py``), with the drill's marks
(``tests.support.programs.elastic_train``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.real_cluster_pods import RUNTIME_IMAGE as IMAGE
from tests.support.real_cluster_pods import shared_folder

TRAIN = {"steps": 60, "checkpoint_every": 5, "row_seconds": 0.1 / 16, "drill": True}


@task
def record(name: str, **context: Any) -> None:
    ti = context["ti"]
    value = {
        "result": ti.xcom_pull(task_ids=name),
        "goodput": ti.xcom_pull(task_ids=name, key="goodput"),
    }
    Path(os.environ["JAX_TEST_OUT"], f"{name}.json").write_text(json.dumps(value))


def job(task_id: str, **kwargs: Any) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id=task_id,
        accelerator="tpu-v5litepod-8",  # 2 hosts x 4 chips: pool a holds one slice, pool b one
        num_slices=2,
        image=IMAGE,
        backend="kubernetes",
        output_dir=f"{os.environ['JAX_TEST_OUT']}/{task_id}",
        **shared_folder(os.environ["JAX_TEST_OUT"]),
        entrypoint="tests.support.programs:elastic_train",
        entrypoint_kwargs=TRAIN,
        max_restarts=3,
        termination_grace_period=5,
        **kwargs,
    )


ELASTIC = {"min_slices": 1, "shrink_after": 8}
for task_id, kwargs in {
    "deferred": {**ELASTIC, "deferrable": True},
    "in_worker": {**ELASTIC, "deferrable": False},
    "fixed_size": {"deferrable": True},  # no min_slices: it waits for the lost slice
}.items():
    with DAG(f"jax_elastic_real_{task_id}", schedule=None, catchup=False):
        job(task_id, **kwargs) >> record.override(task_id=f"record_{task_id}")(task_id)
