"""The accelerator catalogue: turn ``tpu-v6e-16`` or ``h100`` into the facts a JobSet needs.

Everything here is plain data and runs at DAG parse, so an unknown accelerator fails before
anything reaches a cluster.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
TPU_RESOURCE = "google.com/tpu"
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class Accelerator:
    """What one slice (TPU) or one multi-node job (GPU) is made of."""

    name: str
    kind: Literal["tpu", "gpu"]
    generation: str
    chips: int
    topology: str | None
    hosts: int
    chips_per_host: int
    machine_type: str
    node_selector: MappingProxyType[str, str] = field(compare=False)
    resource_name: str = TPU_RESOURCE

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1


@dataclass(frozen=True)
class _TpuGeneration:
    gke_accelerator: str
    topologies: tuple[str, ...]
    cores_per_chip: int  # v4 and v5p names count TensorCores; v5e and v6e names count chips
    machine_types: MappingProxyType[int, str]  # chips per host -> machine type


_3D = ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16")
_2D = ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")

_TPU: dict[str, _TpuGeneration] = {
    "v4": _TpuGeneration("tpu-v4-podslice", _3D, 2, MappingProxyType({4: "ct4p-hightpu-4t"})),
    "v5p": _TpuGeneration(
        "tpu-v5p-slice", (*_3D, "16x16x16"), 2, MappingProxyType({4: "ct5p-hightpu-4t"})
    ),
    "v5litepod": _TpuGeneration(
        "tpu-v5-lite-podslice",
        _2D,
        1,
        MappingProxyType({1: "ct5lp-hightpu-1t", 4: "ct5lp-hightpu-4t", 8: "ct5lp-hightpu-8t"}),
    ),
    "v6e": _TpuGeneration(
        "tpu-v6e-slice",
        _2D,
        1,
        MappingProxyType({1: "ct6e-standard-1t", 4: "ct6e-standard-4t", 8: "ct6e-standard-8t"}),
    ),
}
_TPU_ALIASES = {"v5e": "v5litepod", "v5lite": "v5litepod"}


@dataclass(frozen=True)
class _GpuModel:
    label: str
    machine_types: MappingProxyType[int, str]  # GPUs per node -> machine type


_GPU: dict[str, _GpuModel] = {
    "l4": _GpuModel(
        "nvidia-l4",
        MappingProxyType(
            {1: "g2-standard-4", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"}
        ),
    ),
    "a100": _GpuModel(
        "nvidia-tesla-a100",
        MappingProxyType({n: f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)} | {16: "a2-megagpu-16g"}),
    ),
    "a100-80gb": _GpuModel(
        "nvidia-a100-80gb", MappingProxyType({n: f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)})
    ),
    "h100": _GpuModel(
        "nvidia-h100-80gb", MappingProxyType({n: f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)})
    ),
    "h100-mega": _GpuModel("nvidia-h100-mega-80gb", MappingProxyType({8: "a3-megagpu-8g"})),
    "h200": _GpuModel("nvidia-h200-141gb", MappingProxyType({8: "a3-ultragpu-8g"})),
    "b200": _GpuModel("nvidia-b200", MappingProxyType({8: "a4-highgpu-8g"})),
}


def _chips(topology: str) -> int:
    return math.prod(int(d) for d in topology.split("x"))


def _chip_count_name(generation: str, topology: str) -> str:
    return f"tpu-{generation}-{_chips(topology) * _TPU[generation].cores_per_chip}"


def tpu_names() -> list[str]:
    """Every valid TPU name, in both chip-count and topology spelling."""
    names = []
    for generation, gen in _TPU.items():
        for topology in gen.topologies:
            names += [_chip_count_name(generation, topology), f"tpu-{generation}-{topology}"]
    return names


def gpu_names() -> list[str]:
    return sorted(_GPU)


def _unknown(value: str, valid: list[str], what: str, probe: str | None = None) -> ValueError:
    close = difflib.get_close_matches(probe or value, valid, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    family = value.removeprefix("tpu-").rsplit("-", 1)[0] + "-" if "-" in value else None
    kin = [v for v in valid if family and v.removeprefix("tpu-").startswith(family)]
    return ValueError(
        f"Unknown {what} {value!r}.{hint} Valid names look like {(kin or valid)[:6]}."
    )


def _host_layouts(gen: _TpuGeneration, topology: str) -> list[int]:
    """Chips per host that GKE offers for a topology, the default first."""
    chips = _chips(topology)
    if chips < 4:
        return [chips]
    if topology == "2x4" and 8 in gen.machine_types:
        return [8, 4]  # one 8-chip host by default; two 4-chip hosts on request
    return [4]


_TPU_RE = re.compile(r"^(?:tpu-)?(?P<gen>v[0-9a-z]+)-(?P<size>\d+(?:x\d+)*)$")


def _tpu_spelling(value: str) -> str:
    return "tpu-" + value.removeprefix("tpu-")


def parse_tpu(accelerator: str, *, chips_per_host: int | None = None) -> Accelerator:
    """Parse a TPU slice name such as ``tpu-v6e-16``, ``v5litepod-4x4`` or ``v5p-2x2x4``.

    ``chips_per_host=4`` asks for the two-host layout of a 2x4 v5e/v6e slice instead of the
    default single 8-chip host.
    """
    if not isinstance(accelerator, str):
        raise TypeError(f"accelerator must be a string, got {type(accelerator).__name__}")
    value = accelerator.strip().lower()
    match = _TPU_RE.match(value)
    generation = match and _TPU_ALIASES.get(match["gen"], match["gen"])
    if not match or generation not in _TPU:
        if value.removeprefix("gpu-") in _GPU:
            raise ValueError(
                f"{accelerator!r} is a GPU; use JaxGpuJobOperator (or @task.jax_gpu) for GPUs."
            )
        raise _unknown(accelerator, tpu_names(), "TPU accelerator", _tpu_spelling(value))
    gen = _TPU[generation]
    size = match["size"]
    if "x" in size:
        topology = size if size in gen.topologies else None
    else:
        by_name = {_chip_count_name(generation, t): t for t in gen.topologies}
        topology = by_name.get(f"tpu-{generation}-{size}")
    if topology is None:
        raise _unknown(accelerator, tpu_names(), "TPU accelerator", _tpu_spelling(value))

    chips = _chips(topology)
    layouts = _host_layouts(gen, topology)
    per_host = layouts[0] if chips_per_host is None else chips_per_host
    if per_host not in layouts:
        raise ValueError(
            f"{accelerator!r} cannot be laid out as {per_host!r} chips per host; "
            f"valid chips_per_host for it: {layouts}."
        )
    return Accelerator(
        name=_chip_count_name(generation, topology),
        kind="tpu",
        generation=generation,
        chips=chips,
        topology=topology,
        hosts=chips // per_host,
        chips_per_host=per_host,
        machine_type=gen.machine_types[per_host],
        node_selector=MappingProxyType(
            {TPU_ACCELERATOR_LABEL: gen.gke_accelerator, TPU_TOPOLOGY_LABEL: topology}
        ),
        resource_name=TPU_RESOURCE,
    )


def parse_gpu(accelerator: str, *, gpus_per_node: int, num_nodes: int) -> Accelerator:
    """Parse a GPU model (``h100``, ``gpu-a100-80gb`` or its GKE label) for a multi-node job."""
    if not isinstance(accelerator, str):
        raise TypeError(f"accelerator must be a string, got {type(accelerator).__name__}")
    value = accelerator.strip().lower().removeprefix("gpu-")
    by_label = {m.label: name for name, m in _GPU.items()}
    model_name = by_label.get(value, value)
    if model_name not in _GPU:
        if _TPU_RE.match(value) and value.startswith(("tpu-", "v")):
            raise ValueError(
                f"{accelerator!r} is a TPU; use JaxTpuSliceOperator (or @task.jax_tpu) for TPUs."
            )
        raise _unknown(accelerator, gpu_names(), "GPU accelerator")
    model = _GPU[model_name]
    for what, n in (("gpus_per_node", gpus_per_node), ("num_nodes", num_nodes)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{what} must be a positive integer, got {n!r}.")
    if gpus_per_node not in model.machine_types:
        raise ValueError(
            f"{model_name} nodes come with {sorted(model.machine_types)} GPUs, "
            f"not gpus_per_node={gpus_per_node}."
        )
    return Accelerator(
        name=f"gpu-{model_name}",
        kind="gpu",
        generation=model_name,
        chips=gpus_per_node * num_nodes,
        topology=None,
        hosts=num_nodes,
        chips_per_host=gpus_per_node,
        machine_type=model.machine_types[gpus_per_node],
        node_selector=MappingProxyType({GPU_ACCELERATOR_LABEL: model.label}),
        resource_name=GPU_RESOURCE,
    )
