"""A capacity list on the real control plane (``test_capacity.py``): its first choice, a
reservation, has no node, so the provider (deferred, and waiting in the worker) falls back to
the Spot pool; behind Kueue, the ClusterQueue's flavor order does the same."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_jax.operators import JaxTpuSliceOperator
from tests.support.real_cluster_pods import RUNTIME_IMAGE as IMAGE

CHOICES = ["reservation:held-elsewhere", "spot"]


@task
def record(name: str, **context: Any) -> None:
    ti = context["ti"]
    value = {
        "result": ti.xcom_pull(task_ids=name),
        "admission": ti.xcom_pull(task_ids=name, key="admission"),
        "goodput": ti.xcom_pull(task_ids=name, key="goodput"),
    }
    Path(os.environ["JAX_TEST_OUT"], f"{name}.json").write_text(json.dumps(value))


def job(task_id: str, **kwargs: Any) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id=task_id,
        accelerator="tpu-v5litepod-8",  # 2 hosts x 4 chips
        image=IMAGE,
        entrypoint="quickstart_train:train",
        entrypoint_kwargs={"steps": 3},
        backend="kubernetes",
        capacity=CHOICES,
        termination_grace_period=5,
        **kwargs,
    )


with DAG("jax_capacity", schedule=None, catchup=False):
    deferred = job("deferred", capacity_wait=12, deferrable=True)
    in_worker = job("in_worker", capacity_wait=12, deferrable=False)
    by_kueue = job("by_kueue", queue_name="capacity-queue", deferrable=True)
    # One after the other: each needs the Spot pool's two hosts.
    deferred >> record.override(task_id="record_deferred")("deferred") >> in_worker
    in_worker >> record.override(task_id="record_in_worker")("in_worker") >> by_kueue
    by_kueue >> record.override(task_id="record_by_kueue")("by_kueue")
