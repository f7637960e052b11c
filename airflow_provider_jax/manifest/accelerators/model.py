"""What every accelerator parses into, and the Kubernetes names it is scheduled by."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
GPU_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
# Set by the kubelet on every node: what tells a 2x4 pool of 4-chip VMs from one of 8-chip VMs.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
TPU_RESOURCE = "google.com/tpu"
GPU_RESOURCE = "nvidia.com/gpu"

GpuDirect = Literal["tcpx", "tcpxo", "rdma"]


@dataclass(frozen=True)
class Accelerator:
    """What one slice (TPU) or one multi-node job (GPU) is made of.

    ``gpu_direct`` names the GPUDirect stack the machine type needs for fast multi-node NCCL
    (None: plain TCP). ``machine_chips`` is how many chips the machine type has, so a pod
    that asks for fewer may share its node with another job's pod. ``dynamic_slicing``: GKE
    carves the slice out of a pool of 4x4x4 cubes at admission instead of one node pool
    holding it (``manifest/dynamic_slicing.py``).
    """

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
    gpu_direct: GpuDirect | None = None
    machine_chips: int = 0
    dynamic_slicing: bool = False

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1

    @property
    def shares_nodes(self) -> bool:
        """Whether another job's pod can land on the same node (it leaves chips free)."""
        return self.chips_per_host < self.machine_chips


def unknown(value: str, valid: list[str], what: str, probe: str | None = None) -> ValueError:
    """An error naming the closest valid spellings."""
    close = difflib.get_close_matches(probe or value, valid, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    family = value.removeprefix("tpu-").rsplit("-", 1)[0] + "-" if "-" in value else None
    kin = [v for v in valid if family and v.removeprefix("tpu-").startswith(family)]
    return ValueError(
        f"Unknown {what} {value!r}.{hint} Valid names look like {(kin or valid)[:6]}."
    )


def check_type(accelerator: object) -> str:
    if not isinstance(accelerator, str):
        raise TypeError(f"accelerator must be a string, got {type(accelerator).__name__}")
    return accelerator.strip().lower()
