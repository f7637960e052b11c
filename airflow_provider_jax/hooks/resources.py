"""The custom resources the triggers list and watch, named once: JobSets, and the Kueue
``Workload`` that queues one.

A resource may be served at several versions; a client tries them in order, newest first,
because the cluster decides which it serves (Kueue serves ``v1beta2`` from 0.15, and only
``v1beta1`` before).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.manifest.jobset_api import GROUP, PLURAL, VERSION
from airflow_provider_jax.manifest.kueue_keys import KUEUE_JOB_UID_LABEL
from airflow_provider_jax.manifest.provider_keys import MANAGED_BY, MANAGED_BY_LABEL
from airflow_provider_jax.manifest.status import as_read

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")


@dataclass(frozen=True)
class Resource:
    """A namespaced custom resource: where it is served, which of its objects a trigger
    lists, what it subscribes to one by, and what of one it never reads.

    :param group: its API group.
    :param versions: the versions to try, newest first.
    :param plural: its resource name.
    :param kind: its kind, for log lines.
    :param label_selector: the objects listed and watched.
    :param key_label: subscribe by this label's value (a Workload's job uid); else by name.
    :param as_read: what of an object the cache keeps (a triggerer caches every one in the
        namespace); by default all of it.
    :param optional: whether a trigger can do without it (a failure to list it is a warning).
    """

    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    label_selector: str = ""
    key_label: str | None = None
    as_read: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    optional: bool = False

    def key(self, obj: Mapping[str, Any]) -> str | None:
        meta = obj.get("metadata") or {}
        if self.key_label is not None:
            return (meta.get("labels") or {}).get(self.key_label)
        return meta.get("name")

    def trim(self, obj: dict[str, Any]) -> dict[str, Any]:
        return obj if self.as_read is None else self.as_read(obj)


def _workload_as_read(workload: dict[str, Any]) -> dict[str, Any]:
    """All but its ``podSets``: the pod templates, kilobytes each, that no trigger reads."""
    spec = workload.get("spec") or {}
    if "podSets" not in spec:
        return workload
    return {**workload, "spec": {k: v for k, v in spec.items() if k != "podSets"}}


OUR_JOBSETS = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
JOBSETS = Resource(GROUP, (VERSION,), PLURAL, "JobSet", OUR_JOBSETS, as_read=as_read)
WORKLOADS = Resource(
    KUEUE_GROUP,
    ("v1beta2", "v1beta1"),
    "workloads",
    "Workload",
    label_selector=KUEUE_JOB_UID_LABEL,
    key_label=KUEUE_JOB_UID_LABEL,
    as_read=_workload_as_read,
    optional=True,
)
