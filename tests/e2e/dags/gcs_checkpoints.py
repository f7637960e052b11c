"""The train_continuous / evaluate_checkpoints pair on a gs:// directory (the GCS emulator),
for the running-Airflow test of checkpoint assets: same product pieces, another location."""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import Asset, AssetWatcher, dag, task

from airflow_provider_jax.triggers.orbax_events import OrbaxCheckpointEventTrigger

RUN_DIR = os.environ.get("JAX_CONTINUOUS_GCS_DIR", "gs://no-bucket-configured/continuous")
CHECKPOINTS = f"{RUN_DIR}/checkpoints"
POLL = float(os.environ.get("JAX_CHECKPOINT_POLL_SECONDS", "30"))
NEW_CHECKPOINT = Asset(
    name="gcs_checkpoints",
    uri=CHECKPOINTS,
    watchers=[
        AssetWatcher(
            name="gcs_finalized_steps",
            trigger=OrbaxCheckpointEventTrigger(checkpoint_dir=CHECKPOINTS, poll_interval=POLL),
        )
    ],
)
START = pendulum.datetime(2026, 1, 1, tz="UTC")


@dag(schedule=None, start_date=START, catchup=False)
def train_continuous_gcs() -> None:
    @task.jax_tpu(accelerator="tpu-v5litepod-8", image="unused-locally", output_dir=RUN_DIR)
    def train() -> dict[str, Any]:
        from quickstart_train import train as fit

        from airflow_provider_jax.runtime import checkpoint_dir

        return fit(
            steps=30,
            checkpoint_dir=checkpoint_dir(),
            checkpoint_every=10,
            max_to_keep=None,
            seconds_per_step=0.3,
        )

    train()


@dag(schedule=[NEW_CHECKPOINT], start_date=START, catchup=False)
def evaluate_checkpoints_gcs() -> None:
    @task
    def new_steps(triggering_asset_events: Any = None) -> list[dict[str, Any]]:
        return [event.extra["payload"] for event in triggering_asset_events[NEW_CHECKPOINT]]

    @task.jax_tpu(accelerator="tpu-v5litepod-4", image="unused-locally")
    def evaluate(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from quickstart_train import evaluate as run_eval

        return [run_eval(c["checkpoint_dir"], c["step"]) for c in checkpoints]

    evaluate(new_steps())


train_continuous_gcs()
evaluate_checkpoints_gcs()
