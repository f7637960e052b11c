"""The custom resources the triggers list and watch, named once: JobSets, and the Kueue
``Workload`` that queues one.

A resource may be served at several versions; a client tries them in order, newest first,
because the cluster decides which it serves (Kueue serves ``v1beta2`` from 0.15, and only
``v1beta1`` before).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.jobset import GROUP, MANAGED_BY, MANAGED_BY_LABEL, PLURAL, VERSION

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"  # Kueue labels each Workload with its job's uid


@dataclass(frozen=True)
class Resource:
    """A namespaced custom resource, and how a cached copy of one may be trimmed."""

    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    label_selector: str = ""

    def key(self, obj: Mapping[str, Any]) -> str | None:
        """What a watcher subscribes by: a JobSet's name; a Workload's job uid."""
        meta = obj.get("metadata") or {}
        if self.plural == WORKLOADS.plural:
            return (meta.get("labels") or {}).get(JOB_UID_LABEL)
        return meta.get("name")

    def trim(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A Workload without its pod templates (kilobytes each, never read): a triggerer
        caches every Workload in the namespace."""
        if self.plural == WORKLOADS.plural and "podSets" in (obj.get("spec") or {}):
            spec = {k: v for k, v in obj["spec"].items() if k != "podSets"}
            return {**obj, "spec": spec}
        return obj


OUR_JOBSETS = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
JOBSETS = Resource(GROUP, (VERSION,), PLURAL, "JobSet", OUR_JOBSETS)
WORKLOADS = Resource(KUEUE_GROUP, ("v1beta2", "v1beta1"), "workloads", "Workload", JOB_UID_LABEL)
