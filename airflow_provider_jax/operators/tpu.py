"""``JaxTpuSliceOperator``: a JAX job on one or more GKE TPU slices."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.operators.job_arguments import TPU_ARGUMENTS, checked, param_docs
from airflow_provider_jax.operators.job_operator import JaxJobOperator


class JaxTpuSliceOperator(JaxJobOperator):
    """Run a JAX program on ``num_slices`` TPU slices of type ``accelerator``."""

    def __init__(
        self,
        *,
        accelerator: str,
        num_slices: int = 1,
        chips_per_host: int | None = None,
        dynamic_slicing: bool = False,
        **kwargs: Any,
    ) -> None:
        checked(locals(), TPU_ARGUMENTS)
        super().__init__(
            accelerator=parse_tpu(
                accelerator, chips_per_host=chips_per_host, dynamic_slicing=dynamic_slicing
            ),
            num_slices=num_slices,
            **kwargs,
        )


JaxTpuSliceOperator.__doc__ = f"{JaxTpuSliceOperator.__doc__}\n{param_docs(TPU_ARGUMENTS)}\n"
