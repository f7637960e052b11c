"""``JaxGpuJobOperator``: a JAX job on several GPU nodes."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.manifest.accelerators import parse_gpu
from airflow_provider_jax.operators.job_arguments import GPU_ARGUMENTS, checked, param_docs
from airflow_provider_jax.operators.job_operator import JaxJobOperator


class JaxGpuJobOperator(JaxJobOperator):
    """Run a JAX program on ``num_nodes`` nodes with ``gpus_per_node`` GPUs each, one JAX
    process per node.
    """

    def __init__(
        self,
        *,
        accelerator: str,
        gpus_per_node: int | None = None,
        num_nodes: int = 1,
        **kwargs: Any,
    ) -> None:
        if given := [
            name for name in ("num_slices", "min_slices", "shrink_after") if name in kwargs
        ]:
            raise ValueError(
                f"JaxGpuJobOperator has no slices ({', '.join(given)}); use num_nodes."
            )
        checked(locals(), GPU_ARGUMENTS)
        super().__init__(
            accelerator=parse_gpu(accelerator, gpus_per_node=gpus_per_node, num_nodes=num_nodes),
            **kwargs,
        )


JaxGpuJobOperator.__doc__ = f"{JaxGpuJobOperator.__doc__}\n{param_docs(GPU_ARGUMENTS)}\n"
