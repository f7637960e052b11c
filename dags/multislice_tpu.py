"""Multislice TPU: two v5e 2x4 slices (two 4-chip hosts each) train as one program.

JAX sees all 16 chips; ``MEGASCALE_*`` env tells XLA which slice each host is in, so
collectives across slices go over the data-center network. Locally the two slices are
simulated as 4 processes with 4 CPU devices each.
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
def multislice_tpu() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-8",  # two 4-chip VMs per slice
        num_slices=2,
        image="us-docker.pkg.dev/my-project/training/jax:latest",
        max_restarts=2,  # a preempted host restarts every slice together
    )
    def train() -> dict[str, Any]:
        import os

        from quickstart_train import train as fit

        return fit(steps=20) | {"slices": int(os.environ["MEGASCALE_NUM_SLICES"])}

    @task
    def show(result: dict[str, Any]) -> None:
        print(f"{result['slices']} slices, {result['devices']} devices: loss {result['loss']:.5f}")

    show(train())


multislice_tpu()
