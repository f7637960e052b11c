"""Train, wait for a finalized Orbax checkpoint, evaluate exactly that step.

``OrbaxCheckpointSensor`` reports a step only once Orbax has finalized it, so the evaluation
never reads a half-written checkpoint. Locally the checkpoints go to a directory per run; on
GKE set the Variable ``jax_output_root`` to a ``gs://`` path and nothing else changes.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import dag, task

from airflow_provider_jax.sensors import OrbaxCheckpointSensor

IMAGE = "{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}"
CHECKPOINTS = (
    "{{ var.value.get('jax_output_root', '/tmp/airflow-jax-outputs') }}"
    "/checkpoint_pipeline/{{ run_id | replace(':', '-') | replace('+', '-') }}/checkpoints"
)
TPU = {"accelerator": "tpu-v5litepod-8", "chips_per_host": 4, "image": IMAGE}


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
)
def checkpoint_pipeline() -> None:
    @task.jax_tpu(**TPU)
    def train(checkpoint_dir: str) -> dict[str, Any]:
        from quickstart_train import train as fit

        return fit(steps=40, checkpoint_dir=checkpoint_dir, checkpoint_every=20)

    wait = OrbaxCheckpointSensor(
        task_id="wait_for_final_checkpoint",
        checkpoint_dir=CHECKPOINTS,
        min_step=40,
        poke_interval=10,
        timeout=60 * 60,
    )

    @task.jax_tpu(**TPU)
    def evaluate(checkpoint_dir: str, checkpoint: dict[str, Any]) -> dict[str, Any]:
        from quickstart_train import evaluate as run_eval

        return run_eval(checkpoint_dir, checkpoint["step"])

    @task
    def report(metrics: dict[str, Any]) -> None:
        print(f"step {metrics['step']}: eval loss {metrics['eval_loss']:.5f}")

    trained = train(CHECKPOINTS)
    evaluated = evaluate(CHECKPOINTS, wait.output)
    trained >> wait
    report(evaluated)


checkpoint_pipeline()
