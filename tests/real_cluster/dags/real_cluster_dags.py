"""DAGs the real-cluster tests run with ``airflow dags test``: real JAX in every pod, in
containers of the runtime image on real nodes, through kube-apiserver, kube-scheduler and the
JobSet and Job controllers. The test's output folder is shared with the pods that write to it
(``tests/support/real_cluster_pods.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_jax.operators import JaxGpuJobOperator, JaxTpuSliceOperator
from tests.support.real_cluster_pods import RUNTIME_IMAGE as IMAGE
from tests.support.real_cluster_pods import program, shared_folder

OUT = os.environ.get("JAX_TEST_OUT", "/tmp")


@task
def record(value: Any, name: str) -> Any:
    Path(os.environ["JAX_TEST_OUT"], f"{name}.json").write_text(json.dumps(value))
    return value


with DAG("jax_real_cluster", schedule=None, catchup=False, default_args={"retry_delay": 0}):
    tpu = JaxTpuSliceOperator(
        task_id="tpu",
        accelerator="tpu-v5litepod-8",  # 2 hosts x 4 chips
        image=IMAGE,
        entrypoint="quickstart_train:train",
        entrypoint_kwargs={"steps": 10},
        backend="kubernetes",
        deferrable=True,
    )
    record.override(task_id="use_tpu")(tpu.output, "tpu")
    gpu = JaxGpuJobOperator(
        task_id="gpu",
        accelerator="h100",
        gpus_per_node=8,
        num_nodes=2,
        image=IMAGE,
        entrypoint="quickstart_train:train",
        entrypoint_kwargs={"steps": 5},
        gpu_networking="none",
        backend="kubernetes",
        deferrable=False,
    )
    record.override(task_id="use_gpu")(gpu.output, "gpu")
    tpu >> JaxTpuSliceOperator(
        task_id="fails",
        accelerator="tpu-v5litepod-8",
        image=IMAGE,
        entrypoint="failing_train:fail_on_host_1",
        backend="kubernetes",
        deferrable=True,
    )
    JaxTpuSliceOperator(
        task_id="nan_result",
        accelerator="tpu-v5litepod-8",
        image=IMAGE,
        entrypoint="failing_train:return_nan",
        output_dir=f"{OUT}/nan-result",
        **shared_folder(OUT),
        backend="kubernetes",
        deferrable=True,
        retries=2,  # a result JSON cannot carry fails the first try: no rerun of the training
    )
    JaxTpuSliceOperator(
        task_id="bare_initialize",  # JAX's own shape of program, unchanged: command= mode
        accelerator="tpu-v5litepod-8",
        image=IMAGE,
        command=["python3", program("tests/fixtures/programs/bare_initialize.py"), OUT],
        **shared_folder(OUT),
        backend="kubernetes",
        deferrable=True,
    )
