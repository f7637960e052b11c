"""Train through a disruption, wait for a finalized Orbax checkpoint, evaluate exactly that step.

Training saves every 10 steps in ``runtime.checkpoint_dir()`` and resumes from
``runtime.resumed_from()``. As a drill, host 1 dies at step ``disrupt_at_step`` (a DAG param;
null turns it off) on the first attempt, as a preempted VM would: the slice restarts, resumes
from step 20 and finishes, in one Airflow try. XComs ``resumed_from`` and ``goodput`` say so.

``OrbaxCheckpointSensor`` reports a step only once Orbax has finalized it, so the evaluation
never reads a half-written checkpoint. Locally the checkpoints go to a directory per run; on
GKE set the Variable ``jax_output_root`` to a ``gs://`` path and nothing else changes.

Give ``train`` ``num_slices=2, restart_strategy="in_place", local_checkpoint_size="1Gi"`` and
the same training code also keeps every step in host memory (``runtime.multi_tier``): the
restart then resumes from step 29 or 28 (the newest every slice finished), and the sensor still sees only ``<run>/checkpoints``.
"""

from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import Param, dag, task

from airflow_provider_jax.sensors import OrbaxCheckpointSensor

IMAGE = "{{ var.value.get('jax_image', 'us-docker.pkg.dev/my-project/training/jax:latest') }}"
# Under AIRFLOW_HOME (make demo: the project's ignored .airflow/) unless the Variable
# jax_output_root names the place (gs://my-bucket/runs on GKE).
LOCAL_OUTPUTS = os.path.join(
    os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"), "jax-outputs"
)
OUTPUT_ROOT = "{{ var.value.get('jax_output_root', '" + LOCAL_OUTPUTS + "') }}"

RUN_DIR = (  # one per DAG run, the same for every try: a retry resumes from its checkpoints
    OUTPUT_ROOT + "/checkpoint_pipeline/{{ run_id | replace(':', '-') | replace('+', '-') }}"
)
CHECKPOINTS = RUN_DIR + "/checkpoints"  # what runtime.checkpoint_dir() is in the pods
TPU = {"accelerator": "tpu-v5litepod-8", "chips_per_host": 4, "image": IMAGE}


@dag(
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["jax", "example"],
    params={
        "disrupt_at_step": Param(
            30, type=["null", "integer"], description="Drill: host 1 dies at this step, once."
        )
    },
    render_template_as_native_obj=True,  # the param reaches train() as an int
)
def checkpoint_pipeline() -> None:
    @task.jax_tpu(**TPU, output_dir=RUN_DIR, max_restarts=2)
    def train(disrupt_at_step: int | None) -> dict[str, Any]:
        from quickstart_train import train as fit

        from airflow_provider_jax.runtime import checkpoint_dir

        return fit(
            steps=40,
            checkpoint_dir=checkpoint_dir(),
            checkpoint_every=10,
            resume=True,
            disrupt_at_step=disrupt_at_step,
        )

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

    trained = train("{{ params.disrupt_at_step }}")
    evaluated = evaluate(CHECKPOINTS, wait.output)
    trained >> wait
    report(evaluated)


checkpoint_pipeline()
