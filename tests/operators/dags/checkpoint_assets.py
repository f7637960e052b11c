"""Checkpoint steps as asset events (``tests/operators/test_checkpoint_assets.py``): a training
task that finalizes steps 5 and 10, one that finalizes none, a sensor that finds step 10, and
a consumer of each kind on the training task's asset."""

from __future__ import annotations

import os

from airflow.sdk import DAG, Asset, PartitionedAssetTimetable, task

from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.sensors import OrbaxCheckpointSensor

OUT = os.environ["JAX_TEST_OUT"]
# Named only: a URI under this run's folder would differ from the one an earlier parse of this
# file activated in the session's database, and Airflow keeps one active asset per name.
STEPS = Asset(name="held_out_steps")
NO_STEPS = Asset(name="held_out_no_steps")
SENSED = Asset(name="held_out_sensed")


def train(task_id: str, asset: Asset, steps: int) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id=task_id,
        accelerator="tpu-v5litepod-4",
        backend="local",
        output_dir=f"{OUT}/{task_id}",
        entrypoint="tests.support.programs:train_with_resume",
        entrypoint_kwargs={"steps": steps, "save_every": 5, "die_at": None},
        checkpoint_asset=asset,
    )


with DAG("jax_checkpoint_assets", schedule=None, catchup=False):
    trained = train("trained", STEPS, steps=10)
    train("untrained", NO_STEPS, steps=3)  # saves nothing: no event
    trained >> OrbaxCheckpointSensor(
        task_id="sensed",
        checkpoint_dir=f"{OUT}/trained/checkpoints",
        checkpoint_asset=SENSED,
        poke_interval=1,
    )

with DAG("each_step", schedule=PartitionedAssetTimetable(assets=STEPS), catchup=False):

    @task
    def evaluate(dag_run=None) -> str:
        return dag_run.partition_key

    evaluate()

with DAG("every_new_checkpoint", schedule=[STEPS], catchup=False):

    @task
    def promote() -> None:
        pass

    promote()
