"""``JaxTpuSliceOperator``: a JAX job on one or more GKE TPU slices."""

from __future__ import annotations

from typing import ClassVar

from airflow_provider_jax.operators.job_arguments import param_docs
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.job_plan import TPU


class JaxTpuSliceOperator(JaxJobOperator):
    """Run a JAX program on ``num_slices`` TPU slices of type ``accelerator``."""

    platform: ClassVar[str] = TPU


JaxTpuSliceOperator.__doc__ = f"{JaxTpuSliceOperator.__doc__}\n{param_docs(TPU)}\n"
