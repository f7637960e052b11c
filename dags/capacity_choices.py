"""Capacity per task: training on a reservation, evaluation on Spot, a nightly sweep on
flex-start (Dynamic Workload Scheduler), packed close together by Kueue's topology-aware
scheduling.

On GKE each task's pods carry what GKE documents for its capacity (docs/capacity.md).
Locally the same DAG runs as shipped: the local backend ignores capacity and placement, and
says so in one log line per task.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import dag, task

TPU_IMAGE = "{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}"
GPU_IMAGE = "us-docker.pkg.dev/my-project/training/jax-cuda:latest"


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def capacity_choices() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        image=TPU_IMAGE,
        capacity="reservation:v5e-training",  # held for us: no stockouts, no preemption
    )
    def train() -> dict[str, Any]:
        from quickstart_train import train as fit

        return fit(steps=20)

    @task.jax_tpu(
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        image=TPU_IMAGE,
        capacity="spot",  # cheap and preemptible: a short evaluation restarts cheaply
        max_restarts=5,
    )
    def evaluate(trained: dict[str, Any]) -> dict[str, Any]:
        return {"train_loss": trained["loss"]}

    @task.jax_gpu(
        accelerator="h100",
        gpus_per_node=8,
        num_nodes=2,
        image=GPU_IMAGE,
        capacity="flex-start",  # wait for the whole set of nodes, then run up to 7 days
        queue_name="dws-queue",  # a LocalQueue with a ProvisioningRequest admission check
        placement="compact",  # nodes as close as the cluster's topology allows
        queue_timeout=timedelta(hours=4),  # no nodes 4 h in: give up on tonight's sweep
        execution_timeout=timedelta(hours=6),  # the try as a whole: queue plus sweep
    )
    def sweep(learning_rate: float) -> dict[str, Any]:
        from quickstart_train import train as fit

        return {"learning_rate": learning_rate, **fit(steps=10, learning_rate=learning_rate)}

    @task
    def summary(evaluated: dict[str, Any], swept: list[dict[str, Any]]) -> None:
        best = min(swept[:], key=lambda r: r["loss"])  # one read: see dags/sweep.py
        print(f"train loss {evaluated['train_loss']:.5f}; best sweep lr {best['learning_rate']}")

    summary(evaluate(train()), sweep.expand(learning_rate=[0.01, 0.05]))


capacity_choices()
