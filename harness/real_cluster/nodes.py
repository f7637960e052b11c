"""The test cluster's Nodes, as GKE labels and taints them, and the accelerator each advertises.

``NODES``: the real nodes every control plane gets (a kubelet and a containerd each,
``harness/real_cluster/node.py``): two ``tpu-v5e`` 2x4 pools of two ``ct5lp-hightpu-4t`` hosts
each (the second a Spot pool) and two ``a3-highgpu-8g`` hosts with 8 H100s each: two TPU
slices and a GPU job at once, what the tests run together at most.

``CUBE_NODES``: one 4x4x4 cube of an Ironwood dynamic slicing pool, 16 ``tpu7x-standard-4t``
hosts with their block, cube and sub-slice partition ids. Sixteen real nodes do not fit this
machine beside the rest, so they are registered by the STAND-IN kubelet
(``harness/real_cluster/kubelet.py``), for the dynamic slicing tests only.

GKE taints accelerator nodes (``google.com/tpu=present:NoSchedule``,
``nvidia.com/gpu=present:NoSchedule``), and its API server's ``ExtendedResourceToleration``
admission adds the matching toleration to a pod that asks for the resource: the test API
server runs that admission plugin too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TPU, GPU = "google.com/tpu", "nvidia.com/gpu"
SPOT_LABEL = "cloud.google.com/gke-spot"
HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    capacity: Mapping[str, str] = field(default_factory=dict)  # {accelerator resource: count}

    @property
    def accelerator(self) -> tuple[str, int] | None:
        """The extended resource the node's device plugin advertises, and how many."""
        for resource, count in self.capacity.items():
            return resource, int(count)
        return None

    @property
    def taints(self) -> list[dict[str, str]]:
        return [
            {"key": resource, "value": "present", "effect": "NoSchedule"}
            for resource in self.capacity
        ]

    @property
    def pool(self) -> str:
        return self.labels["cloud.google.com/gke-nodepool"]


def _tpu_v5e(pool: str, index: int, spot: bool = False) -> Node:
    """A ct5lp-hightpu-4t host of a tpu-v5litepod-8 (2x4) slice; ``spot``: a Spot pool's."""
    return Node(
        f"gke-{pool}-{index}",
        {
            **({SPOT_LABEL: "true"} if spot else {}),
            "cloud.google.com/gke-nodepool": pool,
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "2x4",
            "node.kubernetes.io/instance-type": "ct5lp-hightpu-4t",
        },
        {TPU: "4"},
    )


def _h100(index: int) -> Node:
    """An a3-highgpu-8g host with its place in the data center, as GKE labels compactly placed
    capacity (the levels of its default Kueue Topology): both hosts in one block, each in a
    subblock of its own."""
    return Node(
        f"gke-h100-pool-{index}",
        {
            "cloud.google.com/gke-nodepool": "h100-pool",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            "cloud.google.com/gce-topology-block": "a3-block-0",
            "cloud.google.com/gce-topology-subblock": f"a3-subblock-{index}",
            "cloud.google.com/gce-topology-host": f"a3-host-{index}",
        },
        {GPU: "8"},
    )


# The sub-slice shapes of a cube, with the hosts (4 chips each) one partition of each holds.
SUB_SLICE_HOSTS = {"2x4x4": 8, "2x2x4": 4, "2x2x2": 2, "2x2x1": 1}
CUBE_HOSTS = 16


def _tpu7x_cube(block: str, cube: str, index: int) -> Node:
    """A tpu7x-standard-4t host of one 4x4x4 cube of a dynamic slicing pool, as GKE labels
    it: its block, its cube's partition id and each sub-slice partition it belongs to, each
    with its health (``-state``). The pool is a node pool of the cube's static shape."""
    partitions = {"4x4x4": cube}
    for shape, hosts in SUB_SLICE_HOSTS.items():
        partitions[shape] = f"{cube}-{shape}-{index // hosts}"
    labels = {
        "cloud.google.com/gke-nodepool": cube,
        "cloud.google.com/gke-tpu-accelerator": "tpu7x",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
        "node.kubernetes.io/instance-type": "tpu7x-standard-4t",
        "cloud.google.com/gce-topology-block": block,
        HOSTNAME: f"gke-{cube}-{index}",
    }
    for shape, partition in partitions.items():
        labels[f"cloud.google.com/gke-tpu-partition-{shape}-id"] = partition
        labels[f"cloud.google.com/gke-tpu-partition-{shape}-state"] = "HEALTHY"
    return Node(f"gke-{cube}-{index}", labels, {TPU: "4"})


NODES: tuple[Node, ...] = (
    _tpu_v5e("tpu-v5e-a", 0),
    _tpu_v5e("tpu-v5e-a", 1),
    # A Spot pool, as GKE labels one; no node belongs to any reservation.
    _tpu_v5e("tpu-v5e-b", 0, spot=True),
    _tpu_v5e("tpu-v5e-b", 1, spot=True),
    _h100(0),
    _h100(1),
)

# A node of a pool without accelerators (GKE's default pool): no taint, so a pod that asks for
# no accelerator runs there (the cncf provider's KubernetesJobOperator in bench.startup).
CPU_NODE = Node(
    "gke-cpu-pool-0",
    {
        "cloud.google.com/gke-nodepool": "cpu-pool",
        "node.kubernetes.io/instance-type": "n2-standard-8",
    },
)

# One cube of an Ironwood dynamic slicing pool (docs/ironwood.md): the stand-in kubelet's.
CUBE_NODES: tuple[Node, ...] = tuple(
    _tpu7x_cube("block-a", "tpu7x-cube-a", i) for i in range(CUBE_HOSTS)
)


def pools(nodes: tuple[Node, ...] = NODES) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for node in nodes:
        out.setdefault(node.pool, []).append(node)
    return out
