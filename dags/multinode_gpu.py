"""Multi-node GPU: two nodes with eight H100s each, one JAX process per node.

Locally each node is a process with 8 CPU devices, so the same mesh code runs unchanged.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import dag, task


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def multinode_gpu() -> None:
    @task.jax_gpu(
        accelerator="h100",
        gpus_per_node=8,
        num_nodes=2,
        image="us-docker.pkg.dev/my-project/training/jax-cuda:latest",
        container_resources={"requests": {"memory": "200Gi"}},
    )
    def train() -> dict[str, Any]:
        from quickstart_train import train as fit

        return fit(steps=20)

    @task
    def show(result: dict[str, Any]) -> None:
        print(f"{result['processes']} nodes, {result['devices']} GPUs: loss {result['loss']:.5f}")

    show(train())


multinode_gpu()
