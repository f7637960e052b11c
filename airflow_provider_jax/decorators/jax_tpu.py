"""``@task.jax_tpu``: run the decorated function on every host of one or more TPU slices."""

from __future__ import annotations

from airflow_provider_jax.decorators.jax_job import JaxDecoratedMixin, decorator_for
from airflow_provider_jax.operators.tpu import JaxTpuSliceOperator


class _JaxTpuDecoratedOperator(JaxDecoratedMixin, JaxTpuSliceOperator):
    custom_operator_name = "@task.jax_tpu"


jax_tpu_task = decorator_for(
    _JaxTpuDecoratedOperator, "a TPU slice (or several, with ``num_slices``)"
)
