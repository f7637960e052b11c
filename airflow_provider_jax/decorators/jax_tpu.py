"""``@task.jax_tpu``: run the decorated function on every host of one or more TPU slices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk.bases.decorator import TaskDecorator, task_decorator_factory

from airflow_provider_jax.decorators.jax_job import JaxDecoratedMixin
from airflow_provider_jax.operators.tpu import JaxTpuSliceOperator


class _JaxTpuDecoratedOperator(JaxDecoratedMixin, JaxTpuSliceOperator):
    custom_operator_name = "@task.jax_tpu"


def jax_tpu_task(
    python_callable: Callable | None = None, multiple_outputs: bool | None = None, **kwargs: Any
) -> TaskDecorator:
    """Wrap a function to run on a TPU slice (``accelerator``, ``image``, ``num_slices``, and
    any other ``JaxTpuSliceOperator`` argument). Process 0's return value is the XCom."""
    return task_decorator_factory(
        python_callable=python_callable,
        multiple_outputs=multiple_outputs,
        decorated_operator_class=_JaxTpuDecoratedOperator,
        **kwargs,
    )
