"""Train on a data set: ``Data(...)`` hands the function a plain path on every host.

Here the data set is a folder shipped next to this file (``datasets/regression``), whose
path the local backend passes as it is (not made read-only: the function must not write to
it). On GKE pass the same data from GCS:
``Data("gs://my-bucket/regression/")`` downloads it to each host's disk before the function
starts, and ``Data("gs://my-bucket/large/", fuse=True)`` streams it through GCS FUSE instead.
See ``docs/data.md``.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import dag, task

from airflow_provider_jax import Data


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def data_training() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-4",  # one host, four chips
        image="us-docker.pkg.dev/my-project/training/jax:latest",
    )
    def train(dataset: str, steps: int = 200) -> dict[str, Any]:
        import os

        import jax
        import jax.numpy as jnp
        import numpy as np

        table = np.loadtxt(os.path.join(dataset, "train.csv"), delimiter=",", skiprows=1)
        x, y = jnp.asarray(table[:, :-1]), jnp.asarray(table[:, -1])
        params = {"w": jnp.zeros(x.shape[1]), "b": jnp.zeros(())}

        def loss(p):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

        step = jax.jit(lambda p: jax.tree.map(lambda v, g: v - 0.1 * g, p, jax.grad(loss)(p)))
        for _ in range(steps):
            params = step(params)
        return {"rows": len(table), "loss": float(loss(params))}

    @task
    def show(result: dict[str, Any]) -> None:
        print(f"Data: {result['rows']} rows, loss {result['loss']:.5f}")

    show(train(Data("datasets/regression")))


data_training()
