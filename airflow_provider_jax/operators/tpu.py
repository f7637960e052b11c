"""``JaxTpuSliceOperator``: a JAX job on one or more GKE TPU slices."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.arguments import not_templated
from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.operators.job_operator import JaxJobOperator


class JaxTpuSliceOperator(JaxJobOperator):
    """Run a JAX program on ``num_slices`` TPU slices of type ``accelerator``.

    :param accelerator: a slice such as ``tpu-v6e-16``, ``v5litepod-4x4``, ``v5p-4x4x12`` or
        ``tpu7x-128``; every device type xpk accepts, in its spelling or with ``tpu-``.
    :param num_slices: more than one makes a multislice job (``MEGASCALE_*`` env is set); GKE
        runs multislice on multi-host slices only.
    :param chips_per_host: ``8`` asks for one 8-chip VM for a 2x4 v5e/v6e slice instead of
        the default two 4-chip VMs.
    """

    def __init__(
        self,
        *,
        accelerator: str,
        num_slices: int = 1,
        chips_per_host: int | None = None,
        **kwargs: Any,
    ) -> None:
        not_templated("accelerator", accelerator)
        super().__init__(
            accelerator=parse_tpu(accelerator, chips_per_host=chips_per_host),
            num_slices=num_slices,
            **kwargs,
        )
