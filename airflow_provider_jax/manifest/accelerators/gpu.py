"""GPU models: ``h100`` or xpk's ``h100-80gb-8`` to machine type, GKE label and GPUDirect.

Our short names take ``gpus_per_node``; xpk's device types (``<model>-<GPUs per node>``)
carry it in the name. Each machine type also names the GPUDirect stack GKE gives it
(GPUDirect-TCPX on A3 High, TCPXO on A3 Mega, RDMA on A3 Ultra, A4 and A4X).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from airflow_provider_jax.manifest.accelerators.model import (
    GPU_ACCELERATOR_LABEL,
    GPU_RESOURCE,
    Accelerator,
    GpuDirect,
    check_type,
    unknown,
)


@dataclass(frozen=True)
class GpuModel:
    label: str
    xpk_name: str  # how xpk spells the model before "-<GPUs per node>"
    machine_types: Mapping[int, str]  # GPUs per node -> machine type
    gpu_direct: Mapping[str, GpuDirect]  # machine type -> its GPUDirect stack


MODELS: dict[str, GpuModel] = {
    "l4": GpuModel(
        "nvidia-l4",
        "l4",
        MappingProxyType({n: f"g2-standard-{12 * n}" for n in (1, 2, 4, 8)}),
        MappingProxyType({}),
    ),
    "a100": GpuModel(
        "nvidia-tesla-a100",
        "a100-40gb",
        MappingProxyType({n: f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)} | {16: "a2-megagpu-16g"}),
        MappingProxyType({}),
    ),
    "a100-80gb": GpuModel(
        "nvidia-a100-80gb",
        "a100-80gb",
        MappingProxyType({n: f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)}),
        MappingProxyType({}),
    ),
    "h100": GpuModel(
        "nvidia-h100-80gb",
        "h100-80gb",
        MappingProxyType({n: f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)}),
        MappingProxyType({"a3-highgpu-8g": "tcpx"}),
    ),
    "h100-mega": GpuModel(
        "nvidia-h100-mega-80gb",
        "h100-mega-80gb",
        MappingProxyType({8: "a3-megagpu-8g"}),
        MappingProxyType({"a3-megagpu-8g": "tcpxo"}),
    ),
    "h200": GpuModel(
        "nvidia-h200-141gb",
        "h200-141gb",
        MappingProxyType({8: "a3-ultragpu-8g"}),
        MappingProxyType({"a3-ultragpu-8g": "rdma"}),
    ),
    "b200": GpuModel(
        "nvidia-b200",
        "b200",
        MappingProxyType({8: "a4-highgpu-8g"}),
        MappingProxyType({"a4-highgpu-8g": "rdma"}),
    ),
    "gb200": GpuModel(
        "nvidia-gb200",
        "gb200",
        MappingProxyType({4: "a4x-highgpu-4g"}),
        MappingProxyType({"a4x-highgpu-4g": "rdma", "a4x-highgpu-4g-nolssd": "rdma"}),
    ),
}
# xpk's spelling: model, GPUs per node, and an optional machine variant ("-nolssd").
_XPK = re.compile(r"^(?P<model>[a-z0-9-]+?)-(?P<gpus>\d+)(?P<variant>-nolssd)?$")


def gpu_names() -> list[str]:
    """Our short names and xpk's device types."""
    xpk = [f"{m.xpk_name}-{n}" for m in MODELS.values() for n in m.machine_types]
    return sorted(MODELS) + sorted(xpk)


def _model_of(value: str) -> tuple[str, int | None, str]:
    """(model, GPUs per node the name fixes or None, machine variant suffix)."""
    by_label = {m.label: name for name, m in MODELS.items()}
    name = by_label.get(value, value)
    if name in MODELS:
        return name, None, ""
    match = _XPK.fullmatch(value)
    if match:
        by_xpk = {m.xpk_name: name for name, m in MODELS.items()} | {name: name for name in MODELS}
        model = by_xpk.get(match["model"])
        if model is not None:
            return model, int(match["gpus"]), match["variant"] or ""
    raise unknown(value, gpu_names(), "GPU accelerator")


def is_gpu_name(value: str) -> bool:
    try:
        _model_of(value.strip().lower().removeprefix("gpu-"))
    except ValueError:
        return False
    return True


def parse_gpu(accelerator: str, *, gpus_per_node: int | None, num_nodes: int) -> Accelerator:
    """Parse a GPU model for a multi-node job.

    :param accelerator: ``h100``, ``gpu-a100-80gb``, a GKE label (``nvidia-h100-80gb``) or an
        xpk device type (``h100-80gb-8``, ``gb200-4``), which fixes the GPUs per node.
    :param gpus_per_node: GPUs each node's pod takes; None takes the xpk name's count.
    :param num_nodes: how many nodes (one JAX process each).
    """
    value = check_type(accelerator).removeprefix("gpu-")
    if value.startswith(("tpu", "v4-", "v5", "v6e")):
        raise ValueError(
            f"{accelerator!r} is a TPU; use JaxTpuSliceOperator (or @task.jax_tpu) for TPUs."
        )
    model_name, named_gpus, variant = _model_of(value)
    if gpus_per_node is None:
        gpus_per_node = named_gpus
    if gpus_per_node is None:
        raise ValueError(f"{accelerator!r} needs gpus_per_node (or an xpk name like h100-80gb-8).")
    if named_gpus is not None and named_gpus != gpus_per_node:
        raise ValueError(
            f"{accelerator!r} means {named_gpus} GPUs per node, not gpus_per_node={gpus_per_node}."
        )
    for what, n in (("gpus_per_node", gpus_per_node), ("num_nodes", num_nodes)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{what} must be a positive integer, got {n!r}.")
    model = MODELS[model_name]
    if gpus_per_node not in model.machine_types:
        raise ValueError(
            f"{model_name} nodes come with {sorted(model.machine_types)} GPUs, "
            f"not gpus_per_node={gpus_per_node}."
        )
    machine = model.machine_types[gpus_per_node] + variant
    return Accelerator(
        name=f"gpu-{model_name}",
        kind="gpu",
        generation=model_name,
        chips=gpus_per_node * num_nodes,
        topology=None,
        hosts=num_nodes,
        chips_per_host=gpus_per_node,
        machine_type=machine,
        node_selector=MappingProxyType({GPU_ACCELERATOR_LABEL: model.label}),
        resource_name=GPU_RESOURCE,
        gpu_direct=model.gpu_direct.get(machine),
        machine_chips=max(model.machine_types),
    )
