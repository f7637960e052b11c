"""The accelerator catalogue: turn ``tpu-v6e-16``, ``tpu7x-128`` or ``h100-80gb-8`` into the
facts a JobSet needs.

Everything here is plain data and runs at DAG parse, so an unknown accelerator, or a shape GKE
does not offer, fails before anything reaches a cluster.
"""

from airflow_provider_jax.manifest.accelerators.gpu import gpu_names, parse_gpu
from airflow_provider_jax.manifest.accelerators.model import (
    GPU_ACCELERATOR_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_RESOURCE,
    TPU_TOPOLOGY_LABEL,
    Accelerator,
)
from airflow_provider_jax.manifest.accelerators.tpu import check_multislice, parse_tpu, tpu_names

__all__ = [
    "GPU_ACCELERATOR_LABEL",
    "GPU_RESOURCE",
    "INSTANCE_TYPE_LABEL",
    "TPU_ACCELERATOR_LABEL",
    "TPU_RESOURCE",
    "TPU_TOPOLOGY_LABEL",
    "Accelerator",
    "check_multislice",
    "gpu_names",
    "parse_gpu",
    "parse_tpu",
    "tpu_names",
]
