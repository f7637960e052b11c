"""GKE's dynamic slicing for Ironwood (tpu7x): Kueue and GKE's slice controller carve each
job's slice out of a pool of 4x4x4 cubes when the job is admitted, instead of one node pool
holding one slice. Pure: no I/O.

- A **super-slice** is whole cubes (``4i x 4j x 4k``); Kueue places each cube's 16 hosts in
  one cube partition, and the cubes in one ``gce-topology-block``.
- A **sub-slice** (2x2x1, 2x2x2, 2x2x4, 2x4x4) is carved inside one cube, in a partition of
  its own shape.

What the pods carry is what xpk renders for ``--super-slicing`` (xpk 1.16,
``commands/workload.py``): the accelerator selector with no topology, the
``gke-tpu-slice-topology`` annotation, and no exclusive-topology annotation on the JobSet.
The three Kueue pod-set keys are the values GKE's slice controller's JobSet webhook writes
(``internal/webhooks``, ``internal/topology``): rendering them too makes the job admissible
by Kueue's Topology Aware Scheduling as it stands, and the webhook overwrites them with the
same values. The node-health affinity is the webhook's alone (its healthy values are a
setting of the controller). ``docs/ironwood.md`` has the platform team's side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from airflow_provider_jax.arguments import is_template
from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.manifest.accelerators.tpu_shapes import CUBE_CHIPS, SMALL_3D
from airflow_provider_jax.manifest.capacity import FLEX_START, SPOT, TOPOLOGY_LEVELS
from airflow_provider_jax.manifest.kueue_keys import (
    REQUIRED_TOPOLOGY,
    SLICE_REQUIRED_TOPOLOGY,
    SLICE_SIZE,
)


class _Spec(Protocol):
    """What ``check`` reads of a ``JaxJobSpec`` (which calls it: no import back)."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def accelerator(self) -> Accelerator: ...
    @property
    def queue_name(self) -> str | None: ...
    @property
    def placement(self) -> str | None: ...
    @property
    def pathways(self) -> object | None: ...
    @property
    def capacity(self) -> Any: ...
    @property
    def node_selector(self) -> Mapping[str, str]: ...
    @property
    def annotations(self) -> Mapping[str, str]: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def resources(self) -> Mapping[str, Mapping[str, str]]: ...
    @property
    def unrendered(self) -> bool: ...


SLICE_TOPOLOGY_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"
BLOCK_LABEL = TOPOLOGY_LEVELS["block"]
CUBE_PARTITION_LABEL = "cloud.google.com/gke-tpu-partition-4x4x4-id"
SLICE_ADMISSION_CONTROLLER = "accelerator.gke.io/slice"  # the AdmissionCheck's controllerName
# The keys this module writes on the pods: another argument may not set them.
POD_KEYS = (SLICE_TOPOLOGY_ANNOTATION, REQUIRED_TOPOLOGY, SLICE_REQUIRED_TOPOLOGY, SLICE_SIZE)
# GCE's 63-character names, less what Kueue and GKE add around a workload's name: the
# namespace and '-', 'jobset-', Kueue's hash (11) and GKE's (9). xpk's 28 for 'default'.
_GCE_NAME, _AROUND_NAME = 63, len("-jobset-") + 11 + 9


def is_sub_slice(accelerator: Accelerator) -> bool:
    return accelerator.topology in SMALL_3D


def partition_label(accelerator: Accelerator) -> str:
    """The node label of the partition one slice of the job is carved in (a Kueue level)."""
    if is_sub_slice(accelerator):
        return f"cloud.google.com/gke-tpu-partition-{accelerator.topology}-id"
    return CUBE_PARTITION_LABEL


def slice_size(accelerator: Accelerator) -> int:
    """Pods per partition: a sub-slice's pods all share one, a super-slice's fill each cube."""
    if is_sub_slice(accelerator):
        return accelerator.hosts
    return CUBE_CHIPS // accelerator.chips_per_host


def cubes(accelerator: Accelerator) -> int:
    """How many 4x4x4 cubes one slice takes: several for a super-slice past one cube, whose
    slice no single node pool holds."""
    return 1 if is_sub_slice(accelerator) else max(1, accelerator.chips // CUBE_CHIPS)


def pod_annotations(accelerator: Accelerator) -> dict[str, str]:
    """What a dynamically sliced job's pod template carries."""
    return {
        SLICE_TOPOLOGY_ANNOTATION: str(accelerator.topology),
        REQUIRED_TOPOLOGY: BLOCK_LABEL,
        SLICE_REQUIRED_TOPOLOGY: partition_label(accelerator),
        SLICE_SIZE: str(slice_size(accelerator)),
    }


def max_name_length(namespace: str) -> int:
    """The longest JobSet name whose Slice objects still get valid GCE names."""
    return _GCE_NAME - len(namespace) - _AROUND_NAME


def check(spec: _Spec) -> None:
    """Refuse, naming the argument, what dynamic slicing cannot admit or carve."""
    acc = spec.accelerator

    def real(value: Any) -> bool:
        return not (spec.unrendered and is_template(value))

    if spec.pathways is not None:
        raise ValueError(
            "dynamic_slicing does not go with pathways=: xpk renders Pathways jobs on "
            "static node pools only."
        )
    if not spec.queue_name:
        raise ValueError(
            "dynamic_slicing: Kueue and GKE's slice controller carve the slice when they "
            "admit the job; set queue_name to a LocalQueue whose ClusterQueue has the "
            f"{SLICE_ADMISSION_CONTROLLER!r} admission check (docs/ironwood.md)."
        )
    if spec.placement is not None:
        raise ValueError(
            "placement does not go with dynamic_slicing, which places the slice itself "
            f"(in one {BLOCK_LABEL}, each slice in one {partition_label(acc)})."
        )
    for choice in spec.capacity.choices:
        if choice.kind in (SPOT, FLEX_START):
            raise ValueError(
                f"capacity {str(choice)!r} does not go with dynamic_slicing: GKE slices "
                "dynamically only the cube pools of an All Capacity mode reservation. Use "
                "'reservation:<name>' or 'on-demand'."
            )
    for field in ("limits", "requests"):
        asked = (spec.resources.get(field) or {}).get(acc.resource_name)
        if asked is not None and str(asked) != str(acc.chips_per_host):
            raise ValueError(
                f"container_resources {field} ask for {asked!r} {acc.resource_name} per host; a "
                f"dynamically sliced {acc.topology} needs all {acc.chips_per_host} chips of "
                "each host, so the pods fill their partition exactly. Drop it."
            )
    if real(spec.namespace) and real(spec.name):
        limit = max_name_length(spec.namespace)
        if len(spec.name) > limit:
            raise ValueError(
                f"JobSet name {spec.name!r} is {len(spec.name)} characters; with "
                f"dynamic_slicing in namespace {spec.namespace!r} it may have at most {limit}, "
                "since GKE names its Slice objects after Kueue's workload (as xpk limits "
                "super-slicing workload names)."
            )


def tpus_per_pod(pod_template: Mapping[str, Any], resource: str) -> int | None:
    """The chips one pod asks for: the sum of its containers' limits, as the webhook counts
    them; None when a limit is not a whole number of chips."""
    containers = (pod_template.get("spec") or {}).get("containers") or []
    limits = [
        str((c.get("resources") or {}).get("limits", {}).get(resource, 0)) for c in containers
    ]
    return sum(int(n) for n in limits) if all(n.isdigit() for n in limits) else None


def check_fill(pod_template: Mapping[str, Any], accelerator: Accelerator) -> None:
    """The rule GKE's webhook enforces, checked on the rendered pod (after any override):
    the chips of a partition's pods are exactly the partition's."""
    per_pod = tpus_per_pod(pod_template, accelerator.resource_name)
    wanted = accelerator.chips if is_sub_slice(accelerator) else CUBE_CHIPS
    pods = slice_size(accelerator)
    if per_pod is not None and per_pod * pods == wanted:
        return
    asks = (
        f"each pod asks for {per_pod}, so the {pods} pods of a partition ask for {per_pod * pods}"
        if per_pod is not None
        else "a container's limit is not a whole number of chips"
    )
    raise ValueError(
        f"dynamic_slicing: {accelerator.resource_name}: {asks}; a {accelerator.topology} slice "
        f"needs exactly {wanted} chips per partition (GKE's slice controller refuses anything "
        "else). Leave the TPU resources to the provider (pod_template_override included)."
    )
