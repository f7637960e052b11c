"""kube-scheduler and the cluster autoscaler, as far as a pod's status and events show them.

Off by default: with no node pools, every pod is placed at once, as before. With pools, a pod
lands on a free node whose labels hold its ``nodeSelector`` and whose allocatable accelerators
cover its requests. A pod that fits nowhere stays Pending with the condition kube-scheduler
writes (``PodScheduled=False``, reason ``Unschedulable``, message "0/N nodes are available:
...", its reasons counted and sorted as ``FitError`` does). Where pools autoscale, the
autoscaler then either adds a node that would fit (event ``TriggeredScaleUp``) or records why
it will not (event ``NotTriggerScaleUp``, "pod didn't trigger scale-up: ..." with a count per
reason, as cluster-autoscaler words it).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.k8s_emulator.store import now

ACCELERATORS = ("google.com/tpu", "nvidia.com/gpu")
SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
MAX_SIZE = "max node group size reached"


@dataclass
class NodePool:
    """Nodes alike: ``labels``, ``allocatable`` accelerators each, ``size`` nodes now, and up
    to ``max_size`` once the autoscaler grows it (``max_size`` = ``size``: it never grows)."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    size: int = 1
    max_size: int | None = None
    used: dict[int, str] = field(default_factory=dict)  # node index -> the pod on it

    def misfit(self, pod: Mapping[str, Any]) -> str | None:
        """Why a node of this pool can never hold ``pod``, or None."""
        selector = pod["spec"].get("nodeSelector") or {}
        if any(self.labels.get(k) != v for k, v in selector.items()):
            return SELECTOR_MISMATCH
        for resource, wanted in requests(pod).items():
            if wanted > self.allocatable.get(resource, 0):
                return f"Insufficient {resource}"
        return None


def requests(pod: Mapping[str, Any]) -> dict[str, int]:
    out: Counter[str] = Counter()
    for container in pod["spec"].get("containers") or ():
        limits = (container.get("resources") or {}).get("limits") or {}
        for resource in ACCELERATORS:
            out[resource] += int(limits.get(resource, 0))
    return {k: v for k, v in out.items() if v}


class Scheduler:
    def __init__(self, pools: list[NodePool], autoscaling: bool, record: Callable) -> None:
        """:param record: ``record(pod, reason, message)`` writes a pod Event."""
        self.pools, self.autoscaling, self.record = pools, autoscaling, record
        self.freed = asyncio.Event()

    def place(self, pod: Mapping[str, Any]) -> str | None:
        """Bind ``pod`` to a node (None), or say why it fits on none, as kube-scheduler does."""
        name = pod["metadata"]["name"]
        reasons: Counter[str] = Counter()
        for pool in self.pools:
            why = pool.misfit(pod)
            for node in range(pool.size):
                if why is None and node not in pool.used:
                    pool.used[node] = name
                    return None
                busy = next(iter(requests(pod)), "cpu")
                reasons[why or f"Insufficient {busy}"] += 1
        total = sum(pool.size for pool in self.pools)
        listed = ", ".join(sorted(f"{n} {why}" for why, n in reasons.items()))
        return (
            f"0/{total} nodes are available: {listed}. preemption: 0/{total} nodes are "
            f"available: {total} Preemption is not helpful for scheduling."
        )

    def scale_up(self, pod: Mapping[str, Any]) -> bool:
        """The autoscaler's turn at an unschedulable pod: True if it added a node for it."""
        if not self.autoscaling:
            return False
        reasons: Counter[str] = Counter()
        for pool in self.pools:
            why = pool.misfit(pod) or (MAX_SIZE if pool.size >= (pool.max_size or 0) else None)
            if why is None:
                pool.size += 1
                self.record(
                    pod,
                    "TriggeredScaleUp",
                    f"pod triggered scale-up: [{{{pool.name} "
                    f"{pool.size - 1}->{pool.size} (max: {pool.max_size})}}]",
                )
                return True
            reasons[why] += 1
        listed = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        self.record(pod, "NotTriggerScaleUp", f"pod didn't trigger scale-up: {listed}")
        return False

    def release(self, pod_name: str) -> None:
        for pool in self.pools:
            for node, holder in list(pool.used.items()):
                if holder == pod_name:
                    del pool.used[node]
                    self.freed.set()
                    self.freed = asyncio.Event()


def unschedulable(message: str) -> dict[str, Any]:
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastTransitionTime": now(),
    }


_event_ids = itertools.count()


def event(pod: Mapping[str, Any], reason: str, message: str, component: str) -> dict[str, Any]:
    """A core/v1 Event about ``pod``, as ``kubectl describe`` lists them."""
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.{next(_event_ids):x}",
            "namespace": meta["namespace"],
        },
        "involvedObject": {
            "kind": "Pod",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid", ""),
        },
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "reportingComponent": component,
        "type": "Normal",
        "count": 1,
        "firstTimestamp": now(),
        "lastTimestamp": now(),
    }
