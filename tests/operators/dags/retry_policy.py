"""What the provider's retry policy decides, on real failures of real local jobs
(``tests/operators/test_retry_policy.py``): every task has retries it must use only where
another try can help."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG

from airflow_provider_jax.operators import JaxTpuSliceOperator

RETRIES = {"retries": 2, "retry_delay": timedelta(0)}


def tpu(task_id: str, program: str, **kwargs: Any) -> JaxTpuSliceOperator:
    return JaxTpuSliceOperator(
        task_id=task_id,
        accelerator="tpu-v5litepod-8",
        backend="local",
        entrypoint=f"tests.support.programs:{program}",
        **{**RETRIES, **kwargs},
    )


with DAG("jax_retry_policy", schedule=None, catchup=False):
    tpu("programming_error", "raise_name_error")  # fails in one try
    tpu("transient_error", "raise_connection_error")  # retried, every try used
    tpu("other_error", "raise_value_error")  # the task's own settings: retried
    tpu("other_error_no_retry", "raise_value_error", retry_on_code_error=False)  # one try
