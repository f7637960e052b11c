"""A parameterised run: ``airflow dags trigger parameterised_run --conf '{"steps": 80}'``, or
here ``make dags-test DAG=parameterised_run CONF='{"steps": 80}'``.

Params are validated before the run starts, so a bad value never reaches a TPU.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import Param, dag, task


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    params={
        "steps": Param(40, type="integer", minimum=1, maximum=100_000),
        "learning_rate": Param(0.05, type="number", exclusiveMinimum=0, maximum=1),
        "run_name": Param("baseline", type="string", pattern="^[a-z0-9-]{1,40}$"),
    },
    tags=["jax", "example"],
)
def parameterised_run() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-8",
        image="us-docker.pkg.dev/my-project/training/jax:latest",
        labels={"run-name": "{{ params.run_name }}"},
    )
    def train(params: dict[str, Any] | None = None) -> dict[str, Any]:
        from quickstart_train import train as fit

        result = fit(steps=params["steps"], learning_rate=params["learning_rate"])
        return result | {"run_name": params["run_name"]}

    @task
    def summarize(result: dict[str, Any]) -> None:
        print(f"{result['run_name']}: loss {result['loss']:.5f} after {result['step']} steps")

    summarize(train())


parameterised_run()
