"""Jobs submitted to a MultiKueue manager (``test_multikueue.py``): a TPU job that only
worker-1 has quota for, a GPU job that only worker-2 has (it does not fit worker-1), one
whose worker no connection reaches and that has no output_dir (refused before submission),
one that outlives its execution_timeout, and one that runs on a worker its connection's map
leaves out, with no output_dir (its result cannot come back: the task fails, never None)."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from tests.support.real_cluster_pods import RUNTIME_IMAGE as IMAGE
from tests.support.real_cluster_pods import shared_folder

OUT = os.environ.get("JAX_TEST_OUT", "/tmp")


@task(trigger_rule="all_done")
def record(name: str, **context: Any) -> None:
    ti = context["ti"]
    value = {
        "result": ti.xcom_pull(task_ids=name),
        "admission": ti.xcom_pull(task_ids=name, key="admission"),
    }
    Path(OUT, f"{name}.json").write_text(json.dumps(value))


def gpu_job(task_id: str, connection: str, **kwargs: Any) -> JaxGpuJobOperator:
    """A 2-node H100 job, which only worker-2 has quota for, through ``connection``."""
    return JaxGpuJobOperator(
        task_id=task_id,
        accelerator="h100",
        gpus_per_node=8,
        num_nodes=2,
        image=IMAGE,
        entrypoint="quickstart_train:train",
        entrypoint_kwargs={"steps": 3},
        gpu_networking="none",
        backend="kubernetes",
        queue_name="multikueue",
        kubernetes_conn_id=connection,
        **kwargs,
    )


with DAG("jax_multikueue", schedule=None, catchup=False):
    tpu = JaxTpuSliceOperator(
        task_id="tpu",
        accelerator="tpu-v5litepod-8",
        image=IMAGE,
        entrypoint="quickstart_train:train",
        entrypoint_kwargs={"steps": 3},
        backend="kubernetes",
        queue_name="multikueue",
        kubernetes_conn_id="manager",  # maps both workers: the result comes from the pod
        deferrable=True,
    )
    gpu = gpu_job(
        "gpu",
        "manager_partial",  # worker-2 unreachable: through output_dir
        output_dir=f"{OUT}/gpu-out",
        **shared_folder(OUT),
        deferrable=False,
    )
    # No output_dir: nowhere to read it from
    refused = gpu_job("refused", "manager_partial")
    timed_out = JaxTpuSliceOperator(
        task_id="timed_out",
        accelerator="tpu-v5litepod-8",
        image=IMAGE,
        entrypoint="gated_train:hold_until",
        entrypoint_kwargs={"gate": f"{OUT}/never"},
        **shared_folder(OUT),
        backend="kubernetes",
        queue_name="multikueue",
        kubernetes_conn_id="manager",
        termination_grace_period=5,
        execution_timeout=timedelta(seconds=40),
        deferrable=True,
        trigger_rule="all_done",  # after refused, which fails
    )
    lost = gpu_job(
        "lost",
        "manager_unlisted",  # names worker-1 only; the job runs on worker-2
        deferrable=True,
        retries=0,
        trigger_rule="all_done",  # after timed_out, which fails
    )
    tpu >> record.override(task_id="record_tpu")("tpu") >> gpu
    gpu >> record.override(task_id="record_gpu")("gpu") >> refused >> timed_out >> lost
    lost >> record.override(task_id="record_lost")("lost")
