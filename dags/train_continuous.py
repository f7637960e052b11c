"""Continuous training: one long run that saves an Orbax checkpoint every ``checkpoint_every``
steps into one directory. ``evaluate_checkpoints`` starts on each finalized step, while this
run goes on.

The directory is ``$JAX_CONTINUOUS_DIR/checkpoints`` (default under /tmp for the local
backend; a ``gs://`` path on GKE). When the task succeeds, ``checkpoint_asset`` gets an event
with the newest finalized step, the leader's last report and the JobSet's name, for whatever
promotes or exports the trained model.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import Asset, Param, dag, task

# Under AIRFLOW_HOME (make demo: the project's ignored .airflow/), or JAX_CONTINUOUS_DIR.
RUN_DIR = os.environ.get("JAX_CONTINUOUS_DIR") or os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"),
    "jax-outputs",
    "train_continuous",
)
TPU = {
    "accelerator": "tpu-v5litepod-8",  # 2 hosts x 4 chips
    "image": "{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}",
}
# Named only: its URI is its name. The checkpoint directory is evaluate_checkpoints' watched
# asset's URI, and two active assets never share one.
TRAINED_MODEL = Asset(name="train_continuous_model")


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one writer per checkpoint directory
    tags=["jax", "example", "assets"],
    params={
        "steps": Param(60, type="integer", minimum=1),
        "checkpoint_every": Param(10, type="integer", minimum=1),
        "seconds_per_step": Param(0.0, type="number", minimum=0),
    },
    render_template_as_native_obj=True,
)
def train_continuous() -> None:
    @task.jax_tpu(**TPU, output_dir=RUN_DIR, checkpoint_asset=TRAINED_MODEL, max_restarts=2)
    def train(steps: int, checkpoint_every: int, seconds_per_step: float) -> dict[str, Any]:
        from quickstart_train import train as fit

        from airflow_provider_jax.runtime import checkpoint_dir

        return fit(
            steps=steps,
            checkpoint_dir=checkpoint_dir(),
            checkpoint_every=checkpoint_every,
            resume=True,  # a retry, or the next run, goes on from the newest finalized step
            max_to_keep=None,  # evaluation reads each step after it was saved
            seconds_per_step=seconds_per_step,
        )

    train("{{ params.steps }}", "{{ params.checkpoint_every }}", "{{ params.seconds_per_step }}")


train_continuous()
