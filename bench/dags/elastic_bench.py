"""``bench.elastic``'s two jobs: the same 2-slice training on the real nodes' two TPU pools,
waiting for a lost slice as today and with ``min_slices=1``. Both end at the same fixed
deadline (the bench stops them) with steps left to run; ``BENCH_ELASTIC_DEADLINE`` seconds
(their ``execution_timeout``) is only a backstop."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator
from harness.real_cluster.host_folder import shared_folder
from harness.real_cluster.images import RUNTIME_IMAGE

OUT = os.environ.get("BENCH_ELASTIC_OUT", "/tmp")
DEADLINE = timedelta(seconds=float(os.environ.get("BENCH_ELASTIC_DEADLINE", "600")))
# About 0.1 s of "compute" a step on 2 slices (16 rows a device), twice that on one.
TRAIN = {"steps": 100_000, "checkpoint_every": 10, "row_seconds": 0.1 / 16}


def job(dag_id: str, **kwargs: Any) -> None:
    with DAG(dag_id, schedule=None, catchup=False):
        JaxTpuSliceOperator(
            task_id="train",
            accelerator="tpu-v5litepod-8",  # 2 hosts x 4 chips: pool a holds one slice, b one
            num_slices=2,
            image=RUNTIME_IMAGE,
            backend="kubernetes",
            output_dir=f"{OUT}/{dag_id}",  # and the step times, on this machine's disk
            **shared_folder(OUT),
            entrypoint="bench.pods.elastic_steps:train",
            entrypoint_kwargs=TRAIN,
            max_restarts=5,
            termination_grace_period=5,
            execution_timeout=DEADLINE,
            **kwargs,
        )


job("bench_elastic_wait")
job("bench_elastic_min_slices", min_slices=1, shrink_after=8)
