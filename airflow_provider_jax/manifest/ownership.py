"""What the provider owns on a JobSet, checked once on the final manifest, after every merge.
Pure: no I/O.

Arguments reach the JobSet by several paths: ``labels=`` and ``annotations=`` onto the JobSet,
its Jobs and pods, ``node_selector=`` into the pods' selector, ``pod_template_override``
anywhere in the pod template. Some keys on those paths are the provider's: Airflow's identity
and the shared watch's label, Kueue's queue and its topology requests (``podset-*``), the
accelerator's and ``capacity=``'s node selectors, GKE's slice topology, the capacity list's
and the elastic job's annotations. A user's value there would silently lose (the provider's
wins the merge) or silently win (the job asks Kueue or the scheduler for something the
provider didn't check). So the built JobSet is compared with the one the provider builds from
its own values alone (:func:`provider_only`): at each place, every owned key (one the
provider sets there, or one of :data:`ALWAYS_OWNED`) must hold the provider's value, or be
absent where the provider sets none, and no argument may give another. A new merge path needs
nothing here: the comparison is of the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_jax.manifest import dynamic_slicing
from airflow_provider_jax.manifest.accelerators.model import (
    GPU_ACCELERATOR_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL,
)
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL, PREFERRED_TOPOLOGY
from airflow_provider_jax.manifest.provider_keys import MANAGED_ANNOTATIONS, MANAGED_LABELS

if TYPE_CHECKING:
    from airflow_provider_jax.manifest.spec import JaxJobSpec

# The places a user's value can land, as (what the message calls it, path in the JobSet). The
# pod template's are those of the first replicated job (the program's); a Pathways JobSet's
# others are the provider's alone.
JOBSET_LABELS = ("the JobSet's labels", ("metadata", "labels"))
JOBSET_ANNOTATIONS = ("the JobSet's annotations", ("metadata", "annotations"))
_JOB = ("spec", "replicatedJobs", 0, "template")
_POD = (*_JOB, "spec", "template")
JOB_LABELS = ("its Jobs' labels", (*_JOB, "metadata", "labels"))
POD_LABELS = ("its pods' labels", (*_POD, "metadata", "labels"))
POD_ANNOTATIONS = ("its pods' annotations", (*_POD, "metadata", "annotations"))
POD_NODE_SELECTOR = ("its pods' nodeSelector", (*_POD, "spec", "nodeSelector"))
PLACES = (JOBSET_LABELS, JOBSET_ANNOTATIONS, JOB_LABELS, POD_LABELS, POD_ANNOTATIONS,
          POD_NODE_SELECTOR)  # fmt: skip

# Keys the provider owns at a place even where this job's provider values set none there:
# a tpu7x dynamic slice selects no topology (GKE carves it), a job without a queue has no
# queue label, a static slice carries no podset-slice-size.
ALWAYS_OWNED: dict[tuple[str, tuple[Any, ...]], frozenset[str]] = {
    JOBSET_LABELS: frozenset(MANAGED_LABELS),
    JOBSET_ANNOTATIONS: frozenset(MANAGED_ANNOTATIONS),
    JOB_LABELS: frozenset(MANAGED_LABELS),
    POD_LABELS: frozenset(MANAGED_LABELS),
    POD_ANNOTATIONS: frozenset({*dynamic_slicing.POD_KEYS, PREFERRED_TOPOLOGY}),
    POD_NODE_SELECTOR: frozenset(
        {TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL, GPU_ACCELERATOR_LABEL}
    ),
}


def provider_only(spec: JaxJobSpec) -> JaxJobSpec:
    """``spec`` without what users give at the :data:`PLACES`: the provider's own labels and
    annotations only, no node selector, and an override without its metadata and node
    selector (the rest stays: the program's mounts may name the override's volumes)."""
    override = dict(spec.pod_template_override or {})
    override.pop("metadata", None)
    if isinstance(override.get("spec"), Mapping):
        override["spec"] = {k: v for k, v in override["spec"].items() if k != "nodeSelector"}
    return dataclasses.replace(
        spec,
        labels={k: v for k, v in spec.labels.items() if k in MANAGED_LABELS},
        annotations={k: v for k, v in spec.annotations.items() if k in MANAGED_ANNOTATIONS},
        node_selector={},
        pod_template_override=override or None,
    )


def check(built: Mapping[str, Any], ours: Mapping[str, Any], spec: JaxJobSpec) -> None:
    """A ValueError naming the argument, where ``built`` (the final JobSet) holds anything but
    the provider's value (``ours``, the JobSet of :func:`provider_only`) at an owned key."""
    for place in PLACES:
        where, path = place
        mine, theirs = _at(ours, path), _at(built, path)
        for key in sorted(ALWAYS_OWNED[place] | mine.keys()):
            if theirs.get(key) == mine.get(key):
                given = [arg for arg, value in _given(spec, place, key) if value != mine.get(key)]
                if not given:
                    continue
            else:
                given = [arg for arg, _ in _given(spec, place, key)] or ["another argument"]
            owner = (
                f"the provider sets {key}={mine[key]!r} there"
                if key in mine
                else "the provider owns it and sets none for this job"
            )
            raise ValueError(
                f"{' and '.join(given)} set{'s' if len(given) == 1 else ''} {key!r} in "
                f"{where}, but {owner}: {_HOW.get(key, 'use the argument that sets it')}."
            )


# What a user who wanted another value should change instead.
_HOW = {
    TPU_ACCELERATOR_LABEL: "choose it with accelerator=",
    TPU_TOPOLOGY_LABEL: "choose it with accelerator= (its topology)",
    GPU_ACCELERATOR_LABEL: "choose it with accelerator=",
    **dict.fromkeys(dynamic_slicing.POD_KEYS, "the accelerator and placement= decide it"),
    PREFERRED_TOPOLOGY: "ask for it with placement=",
    KUEUE_QUEUE_LABEL: "use queue_name=",
}


def _given(
    spec: JaxJobSpec, place: tuple[str, tuple[Any, ...]], key: str
) -> Iterator[tuple[str, Any]]:
    """``(argument, value)`` for each argument that gives ``key`` at ``place``."""
    override = spec.pod_template_override or {}
    sources: dict[str, Mapping[str, Any]] = {}
    if place in (JOBSET_LABELS, JOB_LABELS, POD_LABELS):
        sources["labels"] = spec.labels
    if place in (JOBSET_ANNOTATIONS, POD_ANNOTATIONS):
        sources["annotations"] = spec.annotations
    if place == POD_NODE_SELECTOR:
        sources["node_selector"] = spec.node_selector
        sources["pod_template_override"] = (override.get("spec") or {}).get("nodeSelector") or {}
    if place in (POD_LABELS, POD_ANNOTATIONS):
        field = "labels" if place == POD_LABELS else "annotations"
        sources["pod_template_override"] = (override.get("metadata") or {}).get(field) or {}
    for argument, values in sources.items():
        if isinstance(values, Mapping) and key in values and not _provider_value(argument, key):
            yield argument, values[key]


def _provider_value(argument: str, key: str) -> bool:
    """The spec's ``labels``/``annotations`` also carry the provider's own keys (Airflow's
    identity, the capacity choice): those are not the user's."""
    owned = MANAGED_LABELS if argument == "labels" else MANAGED_ANNOTATIONS
    return argument in ("labels", "annotations") and key in owned


def _at(obj: Mapping[str, Any], path: tuple[Any, ...]) -> Mapping[str, Any]:
    for step in path:
        try:
            obj = obj[step]
        except (KeyError, IndexError, TypeError):
            return {}
    return obj if isinstance(obj, Mapping) else {}
