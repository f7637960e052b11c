"""The objects of the emulator's Kueue: its queues, its view of each Workload, the conditions
it writes (``kueue.py`` has the controller)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.k8s_emulator.store import now

WORKLOAD = "workloads"
PROVISIONING_REQUEST = "provisioningrequests"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


@dataclass
class ClusterQueue:
    """Nominal quota of one flavor; ``checks``: its ProvisioningRequest admission checks."""

    name: str
    quota: dict[str, int]  # resource -> nominal quota
    flavor: str = "default-flavor"
    checks: tuple[str, ...] = ()
    preemption: bool = True  # withinClusterQueue: LowerPriority
    retries: int = 3  # the ProvisioningRequestConfig's retryStrategy.backoffLimitCount


@dataclass
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str


@dataclass
class Entry:
    """Kueue's in-memory view of one Workload."""

    namespace: str
    name: str
    jobset: str
    queue: str
    priority: int
    seq: int
    request: dict[str, int]
    podset: str
    attempts: dict[str, int] = field(default_factory=dict)  # check -> ProvisioningRequests made
    reserved: bool = False
    admitted: bool = False
    evicting: bool = False  # its quota is released once its pods are gone
    said: tuple[str, str] | None = None  # the pending (reason, message) last written
    active: bool = True


def condition(kind: str, status: bool, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now(),
    }


def set_conditions(obj: dict[str, Any], *conditions: dict[str, Any]) -> None:
    status = obj.setdefault("status", {})
    kinds = {c["type"] for c in conditions}
    status["conditions"] = [
        *[c for c in status.get("conditions") or () if c["type"] not in kinds],
        *conditions,
    ]


def request_of(jobset: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The first pod set's name, and what every pod of the JobSet asks for in total."""
    total: dict[str, int] = {"pods": 0}
    for rjob in jobset["spec"]["replicatedJobs"]:
        job = rjob["template"]["spec"]
        count = rjob.get("replicas", 1) * job.get("parallelism", 1)
        total["pods"] += count
        for container in job["template"]["spec"]["containers"]:
            resources = container.get("resources") or {}
            asks = resources.get("requests") or resources.get("limits") or {}
            for resource, amount in asks.items():
                if str(amount).isdigit():
                    total[resource] = total.get(resource, 0) + count * int(amount)
    return jobset["spec"]["replicatedJobs"][0]["name"], total
