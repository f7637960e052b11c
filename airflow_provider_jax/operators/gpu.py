"""``JaxGpuJobOperator``: a JAX job on several GPU nodes."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax.arguments import not_templated
from airflow_provider_jax.manifest.accelerators import parse_gpu
from airflow_provider_jax.operators.job_operator import JaxJobOperator


class JaxGpuJobOperator(JaxJobOperator):
    """Run a JAX program on ``num_nodes`` nodes with ``gpus_per_node`` GPUs each, one JAX
    process per node.

    :param accelerator: a GPU model such as ``h100``, ``a100-80gb``, its GKE label, or an xpk
        device type such as ``h100-mega-80gb-8`` or ``gb200-4``.
    :param gpus_per_node: GPUs each node's pod takes (default: the xpk device type's count).
    :param num_nodes: how many nodes, one JAX process each.
    """

    def __init__(
        self,
        *,
        accelerator: str,
        gpus_per_node: int | None = None,
        num_nodes: int = 1,
        **kwargs: Any,
    ) -> None:
        if "num_slices" in kwargs:
            raise ValueError("JaxGpuJobOperator has no slices; use num_nodes.")
        not_templated("accelerator", accelerator)
        super().__init__(
            accelerator=parse_gpu(accelerator, gpus_per_node=gpus_per_node, num_nodes=num_nodes),
            **kwargs,
        )
