"""Which capacity a job's nodes come from (on-demand, Spot, a reservation, flex-start) and
where Kueue's Topology Aware Scheduling puts its pods. Pure: no I/O.

Each choice renders what GKE documents for workloads (``docs/capacity.md`` cites the pages):
node selectors and tolerations on the pods, and for flex-start the Kueue ProvisioningRequest
path (a queue, and ``provreq.kueue.x-k8s.io/`` annotations Kueue copies into the request).
Placement renders Kueue's pod-set topology annotations with GKE's topology labels, the levels
xpk's default Kueue ``Topology`` lists. A combination that cannot work fails here, at parse.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from airflow_provider_jax.arguments import one_of, positive_seconds
from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.manifest.jobset_api import HOSTNAME_LABEL
from airflow_provider_jax.manifest.kueue_keys import PREFERRED_TOPOLOGY, REQUIRED_TOPOLOGY

ON_DEMAND, SPOT, RESERVATION, FLEX_START = "on-demand", "spot", "reservation", "flex-start"
CAPACITIES = (ON_DEMAND, SPOT, f"{RESERVATION}:<name>", FLEX_START)

SPOT_LABEL = "cloud.google.com/gke-spot"
RESERVATION_NAME_LABEL = "cloud.google.com/reservation-name"
RESERVATION_AFFINITY_LABEL = "cloud.google.com/reservation-affinity"
RESERVATION_PROJECT_LABEL = "cloud.google.com/reservation-project"
QUEUED_LABEL = "cloud.google.com/gke-queued"  # nodes of queued-provisioning (flex-start) pools
MAX_RUN_ANNOTATION = "provreq.kueue.x-k8s.io/maxRunDurationSeconds"
FLEX_START_MAX_RUN_S = 7 * 24 * 3600  # flex-start VMs run for at most seven days
CAPACITY_LABELS = (SPOT_LABEL, RESERVATION_NAME_LABEL, QUEUED_LABEL)

TOPOLOGY_LEVELS = {
    "block": "cloud.google.com/gce-topology-block",
    "subblock": "cloud.google.com/gce-topology-subblock",
    "host": "cloud.google.com/gce-topology-host",
    "node": HOSTNAME_LABEL,
}
# A3 High with fewer than 8 GPUs comes only as Spot or flex-start VMs: it cannot be reserved.
SPOT_OR_FLEX_ONLY = frozenset({"a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g"})
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")  # Compute Engine's names
_PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")


@dataclass(frozen=True)
class Capacity:
    """A parsed ``capacity=``: the kind, and for a reservation its name and project.

    :param kind: ``on-demand``, ``spot``, ``reservation`` or ``flex-start``.
    :param reservation: the reservation's name.
    :param project: the project that shares the reservation, when not the cluster's.
    """

    kind: str = ON_DEMAND
    reservation: str | None = None
    project: str | None = None

    @classmethod
    def parse(cls, value: object, reservation_project: str | None = None) -> Capacity:
        if not isinstance(value, str):
            raise ValueError(f"capacity must be one of {CAPACITIES}, got {value!r}.")
        if value != value.strip():  # matched whole, as every name: a slip is named, not fixed
            raise ValueError(
                f"capacity {value!r} has whitespace around it: give {value.strip()!r}."
            )
        kind, _, name = value.partition(":")
        if kind == RESERVATION:
            if not _RESOURCE_NAME.fullmatch(name):
                raise ValueError(
                    f"capacity {value!r}: a reservation name is 1-63 lowercase letters, digits "
                    "and hyphens, starting with a letter (reservation:<name>)."
                )
        elif kind not in (ON_DEMAND, SPOT, FLEX_START) or name:
            raise ValueError(f"capacity must be one of {CAPACITIES}, got {value!r}.")
        if reservation_project is not None:
            if kind != RESERVATION:
                raise ValueError("reservation_project needs capacity='reservation:<name>'.")
            if not isinstance(reservation_project, str) or not _PROJECT_ID.fullmatch(
                reservation_project
            ):
                raise ValueError(
                    f"reservation_project {reservation_project!r} is no project id: 6-30 "
                    "lowercase letters, digits and '-', starting with a letter."
                )
        return cls(kind, name or None, reservation_project)

    def __str__(self) -> str:
        return f"{RESERVATION}:{self.reservation}" if self.kind == RESERVATION else self.kind


@dataclass(frozen=True)
class PodFields:
    """What a capacity or placement adds to every pod."""

    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


def capacity_fields(
    capacity: Capacity,
    accelerator: Accelerator,
    *,
    queue_name: str | None,
    max_run_s: int | None,
    node_selector: Mapping[str, str],
    extra_selector: Mapping[str, str] | None = None,
    flex_start_by_kueue: bool = False,
) -> PodFields:
    """The pods' fields for ``capacity``, or a ValueError naming the rule it breaks.
    ``extra_selector``: a ComputeClass's; ``flex_start_by_kueue``: a Kueue flavor may be
    flex-start, so its ProvisioningRequest gets the run's length."""
    max_run = {MAX_RUN_ANNOTATION: str(max_run_s)} if max_run_s is not None else {}
    if capacity.kind == SPOT:
        fields = PodFields(
            {SPOT_LABEL: "true"},
            [{"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        )
    elif capacity.kind == RESERVATION:
        if accelerator.machine_type in SPOT_OR_FLEX_ONLY:
            raise ValueError(
                f"capacity {RESERVATION}:{capacity.reservation}: {accelerator.machine_type} "
                "(fewer than 8 H100s) cannot be reserved; it comes only as Spot or flex-start."
            )
        selector = {
            RESERVATION_NAME_LABEL: str(capacity.reservation),
            RESERVATION_AFFINITY_LABEL: "specific",
        }
        if capacity.project:
            selector[RESERVATION_PROJECT_LABEL] = capacity.project
        fields = PodFields(selector)
    elif capacity.kind == FLEX_START:
        if not queue_name:
            raise ValueError(
                "capacity 'flex-start' is admitted by Kueue once a ProvisioningRequest has the "
                "nodes: set queue_name to a LocalQueue whose ClusterQueue has that admission check."
            )
        if max_run_s is not None and max_run_s > FLEX_START_MAX_RUN_S:
            raise ValueError(
                f"capacity 'flex-start' VMs run at most {FLEX_START_MAX_RUN_S // 86400} days; "
                f"execution_timeout asks for {max_run_s} s."
            )
        fields = PodFields(
            {QUEUED_LABEL: "true"},
            [{"key": QUEUED_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
            max_run,
        )
    else:
        fields = PodFields(annotations=max_run if flex_start_by_kueue else {})
    fields.node_selector.update(extra_selector or {})
    for key, value in fields.node_selector.items():
        if key in node_selector and node_selector[key] != value:
            raise ValueError(
                f"node_selector sets {key}={node_selector[key]!r}, but capacity "
                f"{str(capacity)!r} needs {value!r}: drop it from node_selector."
            )
    return fields


def placement_annotations(
    placement: str | None, accelerator: Accelerator, num_slices: int, queue_name: str | None
) -> dict[str, str]:
    """Kueue TAS annotations for ``placement``: ``compact`` (as close as the cluster allows),
    ``required:<level>`` or ``preferred:<level>``, level one of :data:`TOPOLOGY_LEVELS`."""
    if placement is None:
        return {}
    if not isinstance(placement, str):
        raise ValueError(f"placement must be a string, got {placement!r}.")
    how, _, level = placement.partition(":")
    if placement == "compact":
        how, level = "preferred", "node"
    if how not in ("required", "preferred") or level not in TOPOLOGY_LEVELS:
        raise ValueError(
            "placement must be 'compact', 'required:<level>' or 'preferred:<level>' with a "
            f"level in {sorted(TOPOLOGY_LEVELS)}; got {placement!r}."
        )
    if accelerator.kind == "tpu" and num_slices == 1:
        raise ValueError(
            "placement: one TPU slice is already one ICI-connected node pool; placement "
            "places GPU jobs and multislice TPU jobs."
        )
    if not queue_name:
        raise ValueError(
            "placement is Kueue's Topology Aware Scheduling: set queue_name to a LocalQueue "
            "whose ClusterQueue's flavor has a Topology."
        )
    key = REQUIRED_TOPOLOGY if how == "required" else PREFERRED_TOPOLOGY
    return {key: TOPOLOGY_LEVELS[level]}


QueueUntil = Literal["running", "admitted"]  # queue_timeout_until: every pod running, or admitted
QUEUE_UNTIL: tuple[QueueUntil, ...] = get_args(QueueUntil)


def queue_timeout_seconds(
    timeout: datetime.timedelta | float | None, until: str, queue_name: str | None
) -> float | None:
    """``queue_timeout`` as seconds, or a ValueError: it must be positive, and waiting for
    Kueue's admission needs a Kueue queue."""
    one_of("queue_timeout_until", until, QUEUE_UNTIL)
    if until == "admitted" and not queue_name:
        raise ValueError("queue_timeout_until='admitted' waits for Kueue: set queue_name.")
    if timeout is None:
        return None
    return positive_seconds("queue_timeout", timeout, timedelta_ok=True)


def described(manifest: Mapping[str, Any]) -> str | None:
    """The capacity and placement a manifest's pods ask for, for the local backend's note
    that it ignores them; None when they ask for none."""
    rjob = ((manifest.get("spec") or {}).get("replicatedJobs") or [{}])[0]
    pod = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    asked = [f"{k}={v}" for k, v in selector.items() if k in CAPACITY_LABELS]
    topology = (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY)
    asked += [f"{k}={v}" for k, v in annotations.items() if k in topology]
    return ", ".join(asked) or None
