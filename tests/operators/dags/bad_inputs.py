"""Values that are only wrong once rendered, or once the pods run: the bad-input table's rows
past parse time (``tests/test_bad_inputs.py``). Every task here must fail, and clearly."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator
from airflow_provider_jax.sensors import OrbaxCheckpointSensor
from tests.support.dag_tasks import tpu as slice_task

MISSING_IMAGE = "us-docker.pkg.dev/my-project/training/jax:no-such-tag"


def tpu(task_id: str, **kwargs: Any) -> JaxTpuSliceOperator:
    """A deferred slice that runs ``tests.support.programs:echo``."""
    program = {"command": None, "entrypoint": "tests.support.programs:echo"}
    return slice_task(
        task_id, **{**program, "initialize_distributed": False, "deferrable": True, **kwargs}
    )


with DAG(
    "bad_inputs",
    schedule=None,
    catchup=False,
    render_template_as_native_obj=True,
    params={"image": "Jax:Latest", "steps": 30, "name": "Train_Run", "ckpt": "s3://b/ckpt",
            "team": "ML Team", "ns": "Team_A", "env": ["STEPS=30"], "module": "my programs"},
):  # fmt: skip
    # Rendered: checked before any call to the cluster.
    tpu("image_renders_invalid", image="{{ params.image }}")
    tpu("env_renders_to_int", env={"STEPS": "{{ params.steps }}"})
    tpu("name_renders_invalid", name="{{ params.name }}")
    tpu("label_renders_invalid", labels={"team": "{{ params.team }}"})
    tpu("namespace_renders_invalid", namespace="{{ params.ns }}")
    tpu("output_dir_renders_s3", output_dir="{{ params.ckpt }}")
    tpu("env_renders_to_list", env="{{ params.env }}")
    tpu("entrypoint_renders_invalid", entrypoint="tests.{{ params.module }}:echo")
    OrbaxCheckpointSensor(
        task_id="checkpoint_dir_renders_invalid",
        checkpoint_dir="{{ params.ckpt }}",
        poke_interval=1,
        timeout=60,
    )
    # Only the leader's process can know; retries are set, and must not be used: a retry
    # would train again for the same value.
    no_retry = {"retries": 2, "retry_delay": timedelta(0)}
    tpu("result_not_json", entrypoint="tests.support.programs:not_json", **no_retry)
    tpu("result_nan", entrypoint="tests.support.programs:nan", **no_retry)
    tpu(
        "result_too_big",
        entrypoint="tests.support.programs:large",
        entrypoint_kwargs={"size": 8000},
        **no_retry,
    )
    # Only the kubelet can know.
    tpu("image_not_found", image=MISSING_IMAGE)
