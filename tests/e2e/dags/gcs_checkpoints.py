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
    @task.jax_tpu(accelerator="tpu-v5litepod-4", image="unused-locally", output_dir=RUN_DIR)
    def train() -> dict[str, Any]:
        """Saves steps 10, 20 and 30, 3 s apart, through the helper the other GCS tests use."""
        import time

        from airflow_provider_jax.runtime import checkpoint_dir
        from tests.support.orbax_saves import save_steps

        for step in (10, 20, 30):
            time.sleep(3)
            save_steps(checkpoint_dir(), [step])
        return {"step": 30}

    train()


@dag(schedule=[NEW_CHECKPOINT], start_date=START, catchup=False)
def evaluate_checkpoints_gcs() -> None:
    @task
    def new_steps(triggering_asset_events: Any = None) -> list[dict[str, Any]]:
        return [event.extra["payload"] for event in triggering_asset_events[NEW_CHECKPOINT]]

    @task.jax_tpu(accelerator="tpu-v5litepod-4", image="unused-locally")
    def evaluate(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
        import orbax.checkpoint as ocp

        results = []
        for checkpoint in checkpoints:
            manager = ocp.CheckpointManager(checkpoint["checkpoint_dir"])
            state = manager.restore(checkpoint["step"], args=ocp.args.StandardRestore())
            manager.close()
            # save_steps fills "w" with the step: this reads back which step it restored.
            results.append({"step": checkpoint["step"], "w": float(state["w"][0][0])})
        return results

    evaluate(new_steps())


train_continuous_gcs()
evaluate_checkpoints_gcs()
