"""OpenLineage: a JAX task reports the checkpoints it was handed as inputs and its own as
outputs, through the provider's standard extractor (the provider is a test dependency)."""

from __future__ import annotations

from airflow.providers.openlineage.extractors.base import DefaultExtractor
from airflow.sdk import task

from airflow_provider_jax.operators import JaxTpuSliceOperator


def _datasets(items) -> list[tuple[str, str]]:
    return [(d.namespace, d.name) for d in items]


def test_inputs_are_the_checkpoints_handed_over_and_outputs_its_own() -> None:
    step = {
        "step": 40,
        "path": "gs://bkt/llm/checkpoints/40",
        "checkpoint_dir": "gs://bkt/llm/checkpoints",
    }
    op = JaxTpuSliceOperator(
        task_id="evaluate",
        accelerator="tpu-v5litepod-4",
        image="img",
        entrypoint="pkg.eval:main",
        entrypoint_kwargs={"checkpoint": step, "batch": 8, "note": "/not-a-location-key"},
        output_dir="/data/eval/run-1",
    )
    lineage = DefaultExtractor(op).extract_on_complete(task_instance=None)
    assert _datasets(lineage.inputs) == [("gs://bkt", "llm/checkpoints/40")]
    assert _datasets(lineage.outputs) == [("file", "/data/eval/run-1/checkpoints")]


def test_a_decorated_task_reports_its_arguments_by_parameter_name() -> None:
    @task.jax_tpu(accelerator="tpu-v5litepod-8", image="img")
    def train(resume_dir: str, steps: int) -> None: ...

    built = train.operator_class(
        task_id="train",
        python_callable=train.function,
        op_args=["gs://bkt/base-model/checkpoints", 10],
        op_kwargs={},
        accelerator="tpu-v5litepod-8",
        image="img",
    )
    lineage = DefaultExtractor(built).extract_on_complete(task_instance=None)
    assert _datasets(lineage.inputs) == [("gs://bkt", "base-model/checkpoints")]
    assert _datasets(lineage.outputs) == []  # no output_dir
