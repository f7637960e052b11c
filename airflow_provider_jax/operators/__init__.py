"""Operators that run multi-host JAX jobs. Cheap to import: no jax, kubernetes or google-cloud."""

from airflow_provider_jax.operators.gpu import JaxGpuJobOperator
from airflow_provider_jax.operators.job_operator import JaxJobOperator
from airflow_provider_jax.operators.retry_policy import JaxRetryPolicy
from airflow_provider_jax.operators.tpu import JaxTpuSliceOperator

__all__ = ["JaxGpuJobOperator", "JaxJobOperator", "JaxRetryPolicy", "JaxTpuSliceOperator"]
