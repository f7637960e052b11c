"""``JaxTpuSliceOperator``: a JAX job on one or more GKE TPU slices."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.accelerators import parse_tpu
from airflow_provider_jax.operators.jax_job import JaxJobOperator


class JaxTpuSliceOperator(JaxJobOperator):
    """Run a JAX program on ``num_slices`` TPU slices of type ``accelerator``.

    :param accelerator: a slice such as ``tpu-v6e-16``, ``v5litepod-4x4`` or ``v5p-2x2x4``.
    :param num_slices: more than one makes a multislice job (``MEGASCALE_*`` env is set).
    :param chips_per_host: ask for the two-host (4 chips each) layout of a 2x4 slice.
    """

    def __init__(
        self,
        *,
        accelerator: str,
        num_slices: int = 1,
        chips_per_host: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            accelerator=parse_tpu(accelerator, chips_per_host=chips_per_host),
            num_slices=num_slices,
            **kwargs,
        )
