"""Tasks for the test DAGs that run against the Kubernetes API emulator."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.operators import JaxTpuSliceOperator


def tpu(task_id: str, **kwargs: Any) -> JaxTpuSliceOperator:
    """A two-host v5e slice; unless ``kwargs`` say otherwise, its pods' command is the
    emulator's to play."""
    return JaxTpuSliceOperator(
        task_id=task_id,
        accelerator="tpu-v5litepod-8",
        chips_per_host=4,
        **{"image": "jax:test", "command": ["python3", "-c", "print('hello')"], **kwargs},
    )
