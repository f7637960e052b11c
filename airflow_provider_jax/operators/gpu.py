"""``JaxGpuJobOperator``: a JAX job on several GPU nodes."""

from __future__ import annotations

from typing import ClassVar

from airflow_provider_jax.operators.job_arguments import param_docs
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.job_plan import GPU


class JaxGpuJobOperator(JaxJobOperator):
    """Run a JAX program on ``num_nodes`` nodes with ``gpus_per_node`` GPUs each, one JAX
    process per node."""

    platform: ClassVar[str] = GPU


JaxGpuJobOperator.__doc__ = f"{JaxGpuJobOperator.__doc__}\n{param_docs(GPU)}\n"
