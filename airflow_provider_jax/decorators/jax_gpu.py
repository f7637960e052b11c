"""``@task.jax_gpu``: run the decorated function on every node of a multi-node GPU job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk.bases.decorator import TaskDecorator, task_decorator_factory

from airflow_provider_jax.decorators.jax_job import JaxDecoratedMixin
from airflow_provider_jax.operators.gpu import JaxGpuJobOperator


class _JaxGpuDecoratedOperator(JaxDecoratedMixin, JaxGpuJobOperator):
    custom_operator_name = "@task.jax_gpu"


def jax_gpu_task(
    python_callable: Callable | None = None, multiple_outputs: bool | None = None, **kwargs: Any
) -> TaskDecorator:
    """Wrap a function to run on ``num_nodes`` GPU nodes (``accelerator``, ``gpus_per_node``,
    ``image``, and any other ``JaxGpuJobOperator`` argument). Node 0's return value is the XCom."""
    return task_decorator_factory(
        python_callable=python_callable,
        multiple_outputs=multiple_outputs,
        decorated_operator_class=_JaxGpuDecoratedOperator,
        **kwargs,
    )
