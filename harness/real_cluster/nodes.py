"""The Nodes the fake kubelet registers, with GKE's labels and the device plugins' capacity,
and the two scheduling rules it applies when binding a pod (there is no kube-scheduler):
node selectors and required node affinity, and accelerator capacity.

Pod affinity (JobSet's exclusive placement per node pool) is not evaluated: binding prefers
the first node that fits, which keeps each slice of these tests in one pool anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TPU, GPU = "google.com/tpu", "nvidia.com/gpu"
SPOT_LABEL = "cloud.google.com/gke-spot"


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    capacity: Mapping[str, str] = field(default_factory=dict)


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
            "kubernetes.io/hostname": f"gke-{pool}-{index}",
        },
        {TPU: "4"},
    )


def _h100(index: int) -> Node:
    return Node(
        f"gke-h100-pool-{index}",
        {
            "cloud.google.com/gke-nodepool": "h100-pool",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            "kubernetes.io/hostname": f"gke-h100-pool-{index}",
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
        "kubernetes.io/hostname": f"gke-{cube}-{index}",
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
    Node(
        "gke-cpu-pool-0",
        {
            "cloud.google.com/gke-nodepool": "cpu-pool",
            "node.kubernetes.io/instance-type": "n2-standard-32",
            "kubernetes.io/hostname": "gke-cpu-pool-0",
        },
    ),
    # One cube of an Ironwood dynamic slicing pool (docs/ironwood.md).
    *(_tpu7x_cube("block-a", "tpu7x-cube-a", i) for i in range(CUBE_HOSTS)),
)


def _expression(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def selector_matches(node: Node, pod: Mapping[str, Any]) -> bool:
    spec = pod["spec"]
    if any(node.labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(
        all(_expression(node.labels, e) for e in term.get("matchExpressions") or [])
        for term in terms
    )


def _accelerators(pod: Mapping[str, Any]) -> dict[str, int]:
    wanted: dict[str, int] = {}
    for container in pod["spec"]["containers"]:
        requests = {**(container.get("resources") or {}).get("limits", {}),
                    **(container.get("resources") or {}).get("requests", {})}  # fmt: skip
        for resource in (TPU, GPU):
            if resource in requests:
                wanted[resource] = wanted.get(resource, 0) + int(requests[resource])
    return wanted


def fits(node: Node, pod: Mapping[str, Any], placed: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``pod``'s accelerators fit beside the ``placed`` pods still running there."""
    for resource, count in _accelerators(pod).items():
        taken = sum(_accelerators(p).get(resource, 0) for p in placed)
        if taken + count > int(node.capacity.get(resource, 0)):
            return False
    return True


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression(labels, e) for e in selector.get("matchExpressions") or [])


def _pods_in_domain(
    node: Node, key: str, placed: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[Mapping[str, Any]]:
    """The pods placed on every node that shares ``node``'s value of topology ``key``."""
    value = node.labels.get(key)
    if value is None:
        return []
    return [p for n in NODES if n.labels.get(key) == value for p in placed.get(n.name, ())]


def affinity_allows(
    node: Node, pod: Mapping[str, Any], placed: Mapping[str, Sequence[Mapping[str, Any]]]
) -> bool:
    """Required pod affinity and anti-affinity, as kube-scheduler applies them (JobSet's
    exclusive placement: one slice per node pool). ``placed``: node name -> its live pods."""
    affinity = pod["spec"].get("affinity") or {}
    labels = pod["metadata"].get("labels") or {}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    for term in (affinity.get("podAntiAffinity") or {}).get(required) or []:
        domain = _pods_in_domain(node, term["topologyKey"], placed)
        if any(
            _selects(term.get("labelSelector"), p["metadata"].get("labels") or {}) for p in domain
        ):
            return False
    everywhere = [p for pods in placed.values() for p in pods]
    for term in (affinity.get("podAffinity") or {}).get(required) or []:
        selector = term.get("labelSelector")
        matching = [p for p in everywhere if _selects(selector, p["metadata"].get("labels") or {})]
        if not matching and _selects(selector, labels):
            continue  # the first pod of its group may go anywhere
        domain = _pods_in_domain(node, term["topologyKey"], placed)
        if not any(_selects(selector, p["metadata"].get("labels") or {}) for p in domain):
            return False
    return True
