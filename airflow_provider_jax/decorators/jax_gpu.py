"""``@task.jax_gpu``: run the decorated function on every node of a multi-node GPU job."""

from __future__ import annotations

from airflow_provider_jax.decorators.jax_job import JaxDecoratedMixin, decorator_for
from airflow_provider_jax.operators.gpu import JaxGpuJobOperator


class _JaxGpuDecoratedOperator(JaxDecoratedMixin, JaxGpuJobOperator):
    custom_operator_name = "@task.jax_gpu"


jax_gpu_task = decorator_for(_JaxGpuDecoratedOperator, "a multi-node GPU job")
