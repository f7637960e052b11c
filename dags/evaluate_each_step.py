"""Evaluate the step each ``train_continuous`` run finishes with, once per step.

``train_continuous``'s ``checkpoint_asset`` gets two events per step: this DAG is scheduled on
the one with the step as its partition key (``PartitionedAssetTimetable``), so each run is one
step's, ``dag_run.partition_key`` names it, and a step can be evaluated again on its own (a run
triggered with that ``partition_key``, or ``airflow dags clear --partition-key``). A
``schedule=[asset]`` DAG on the same asset gets the event without a key, as before
(``docs/assets.md``).

``airflow dags test`` makes a run without a partition key: give the step as the ``step`` param
instead, after a ``train_continuous`` run saved it (``make dags-test DAG=train_continuous``, then
``make dags-test DAG=evaluate_each_step CONF='{"step": 60}'``). A run with neither fails at once,
saying so.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import Asset, Param, PartitionedAssetTimetable, dag, task
from airflow.sdk.exceptions import AirflowFailException

RUN_DIR = os.environ.get("JAX_CONTINUOUS_DIR") or os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"),
    "jax-outputs",
    "train_continuous",
)
TRAINED_MODEL = Asset(name="train_continuous_model")  # train_continuous's checkpoint_asset


@dag(
    schedule=PartitionedAssetTimetable(assets=TRAINED_MODEL),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example", "assets"],
    params={
        "step": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            description="the step, for a run without a partition key",
        )
    },
)
def evaluate_each_step() -> None:
    @task
    def step_of_run(dag_run: Any = None, params: Any = None) -> int:
        """The step this run evaluates: its partition key, else the ``step`` param."""
        step = dag_run.partition_key if dag_run.partition_key is not None else params["step"]
        if step is None:
            raise AirflowFailException(
                "evaluate_each_step evaluates one step, which a run gets as its partition key "
                "(from train_continuous's checkpoint_asset event, or a run triggered with it). "
                "This run has none: give the step as the 'step' param, as in `make dags-test "
                "DAG=evaluate_each_step CONF='{\"step\": 60}'` after `make dags-test "
                "DAG=train_continuous`."
            )
        return int(step)

    @task.jax_tpu(
        accelerator="tpu-v5litepod-4",  # one host: evaluation needs no more
        image="{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}",
    )
    def evaluate(checkpoint_dir: str, step: int) -> dict[str, Any]:
        from quickstart_train import evaluate as run_eval

        return run_eval(checkpoint_dir, step)

    @task
    def log_metrics(metrics: dict[str, Any]) -> None:
        print(f"EVAL step {metrics['step']}: eval loss {metrics['eval_loss']:.5f}")

    log_metrics(evaluate(f"{RUN_DIR}/checkpoints", step_of_run()))


evaluate_each_step()
