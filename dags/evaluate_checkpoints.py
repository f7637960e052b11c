"""Evaluate every checkpoint ``train_continuous`` finalizes, on a smaller slice, as it lands.

The schedule is an asset whose ``AssetWatcher`` lists the checkpoint directory from the
triggerer: no sensor holds a worker slot, and each finalized step is announced once. A run's
``triggering_asset_events`` hold its step (Airflow puts several in one run only when events
arrive faster than it creates runs; then each is evaluated).

``airflow dags test`` makes a run with no asset event: give the step as the ``step`` param
instead, after a ``train_continuous`` run saved it (``make dags-test DAG=train_continuous``, then
``make dags-test DAG=evaluate_checkpoints CONF='{"step": 60}'``). A run with neither fails at
once, saying so, rather than succeed having evaluated nothing.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import Asset, AssetWatcher, Param, dag, task
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_jax.triggers.orbax_events import OrbaxCheckpointEventTrigger

# Under AIRFLOW_HOME (make demo: the project's ignored .airflow/), or JAX_CONTINUOUS_DIR.
RUN_DIR = os.environ.get("JAX_CONTINUOUS_DIR") or os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"),
    "jax-outputs",
    "train_continuous",
)
CHECKPOINTS = f"{RUN_DIR}/checkpoints"
NEW_CHECKPOINT = Asset(
    name="train_continuous_checkpoints",
    uri=CHECKPOINTS,
    watchers=[
        AssetWatcher(
            name="finalized_steps",
            trigger=OrbaxCheckpointEventTrigger(
                checkpoint_dir=CHECKPOINTS,
                poll_interval=float(os.environ.get("JAX_CHECKPOINT_POLL_SECONDS", "30")),
            ),
        )
    ],
)


@dag(
    schedule=[NEW_CHECKPOINT],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example", "assets"],
    params={
        "step": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            description="the step, for a run without an asset event",
        )
    },
)
def evaluate_checkpoints() -> None:
    @task
    def new_steps(triggering_asset_events: Any = None, params: Any = None) -> list[dict[str, Any]]:
        """Each step the run's asset events announce, else the ``step`` param's."""
        events = triggering_asset_events[NEW_CHECKPOINT]
        if events:
            return [event.extra["payload"] for event in events]
        if params["step"] is None:
            raise AirflowFailException(
                "evaluate_checkpoints evaluates the steps its asset events announce, and this "
                "run has none (a run by hand): give the step as the 'step' param, as in `make "
                "dags-test DAG=evaluate_checkpoints CONF='{\"step\": 60}'` after `make dags-test "
                "DAG=train_continuous`."
            )
        return [{"step": params["step"], "checkpoint_dir": CHECKPOINTS}]

    @task.jax_tpu(
        accelerator="tpu-v5litepod-4",  # one host: evaluation needs no more
        image="{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}",
    )
    def evaluate(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from quickstart_train import evaluate as run_eval

        return [run_eval(c["checkpoint_dir"], c["step"]) for c in checkpoints]

    @task
    def log_metrics(results: list[dict[str, Any]]) -> None:
        for metrics in results:
            print(f"EVAL step {metrics['step']}: eval loss {metrics['eval_loss']:.5f}")

    log_metrics(evaluate(new_steps()))


evaluate_checkpoints()
