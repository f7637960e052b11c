"""Pathways: two v5e 4x4 slices (32 chips) driven by one Python process, as Google recommends
for large and elastic TPU jobs.

The function runs once, in the Pathways head (a CPU pod); ``jax.devices()`` is every chip of
both slices, reached through the IFRT proxy, and ``jax.process_count()`` is 1, so there is no
``jax.distributed`` to join. Locally the single controller runs alone with 32 CPU devices,
which tests the same mesh and sharding code on a laptop. See ``docs/pathways.md``.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import dag, task

from airflow_provider_jax import Pathways


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def pathways_training() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-16",  # 4 hosts x 4 chips per slice
        num_slices=2,
        image="us-docker.pkg.dev/my-project/training/jax:jax-0.10.2",  # the proxy's JAX
        pathways=Pathways(scratch_location="gs://my-bucket/pathways-scratch"),
        max_restarts=2,  # a lost TPU host restarts the set, head and workers
    )
    def train() -> dict[str, Any]:
        import jax
        from quickstart_train import train as fit

        return fit(steps=20) | {"process_count": jax.process_count()}

    @task
    def show(result: dict[str, Any]) -> None:
        print(
            f"Pathways: {result['process_count']} process, {result['devices']} devices: "
            f"loss {result['loss']:.5f}"
        )

    show(train())


pathways_training()
