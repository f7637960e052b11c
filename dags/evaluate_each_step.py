"""Evaluate the step each ``train_continuous`` run finishes with, once per step.

``train_continuous``'s ``checkpoint_asset`` gets two events per step: this DAG is scheduled on
the one with the step as its partition key (``PartitionedAssetTimetable``), so each run is one
step's, ``dag_run.partition_key`` names it, and a step can be evaluated again on its own (a run
triggered with that ``partition_key``, or ``airflow dags clear --partition-key``). A
``schedule=[asset]`` DAG on the same asset gets the event without a key, as before
(``docs/assets.md``).
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import Asset, PartitionedAssetTimetable, dag, task

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
)
def evaluate_each_step() -> None:
    @task.jax_tpu(
        accelerator="tpu-v5litepod-4",  # one host: evaluation needs no more
        image="{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}",
    )
    def evaluate(checkpoint_dir: str, step: str) -> dict[str, Any]:
        from quickstart_train import evaluate as run_eval

        return run_eval(checkpoint_dir, int(step))

    @task
    def log_metrics(metrics: dict[str, Any]) -> None:
        print(f"EVAL step {metrics['step']}: eval loss {metrics['eval_loss']:.5f}")

    log_metrics(evaluate(f"{RUN_DIR}/checkpoints", "{{ dag_run.partition_key }}"))


evaluate_each_step()
