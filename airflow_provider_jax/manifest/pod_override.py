"""Merge a user's pod template override into the generated one, as Kubernetes' strategic
merge patch merges a pod, and refuse an override that would undo what the provider needs.
Pure: no I/O.

What an override can and cannot change (``docs/operators.md`` says the same to users):

- Mappings merge key by key; scalars the provider does not own are replaced.
- Lists of objects merge by their Kubernetes merge key (``containers``, ``initContainers``,
  ``volumes``, ``env`` and ``imagePullSecrets`` by ``name``, ``volumeMounts`` by
  ``mountPath``, ``ports`` by ``containerPort``): the provider's entries stay, and the
  override's are merged into them or added.
- ``tolerations`` are added to the provider's (the accelerator's, Spot's, GPUDirect's): a
  pod whose node selector asks for TPU Spot nodes but which no longer tolerates their taints
  would never schedule.
- Refused, naming both sides: an env name the provider's container already has (the JAX
  coordination, the runtime's call, or the task's own ``env=``), a volume or mount path
  the provider uses for something else, and a ``restartPolicy`` other than ``Never`` (JobSet
  restarts the slice; a kubelet restart would hide failures from it).
- The keys the provider owns (a node selector of the accelerator's or ``capacity=``'s, Kueue's
  and GKE's annotations, the queue label) are checked on the final JobSet, whichever argument
  set them (``ownership.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeGuard

from airflow_provider_jax.arguments import image_reference
from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.manifest import pod_schema

# Kubernetes' patchMergeKey of each list the pod spec merges rather than replaces.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}
UNION_LISTS = ("tolerations",)  # the provider's entries kept, the override's added
RESTART_POLICY = "Never"
ARGUMENT = "pod_template_override"


def merge_override(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``override`` into ``base`` (see the module's rules)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            merged[key] = merge_override(current, value)
        elif (
            key in MERGE_KEYS
            and _keyed(current, MERGE_KEYS[key])
            and _keyed(value, MERGE_KEYS[key])
        ):
            merge_key = MERGE_KEYS[key]
            by_key = {item[merge_key]: item for item in current}
            for item in value:
                old = by_key.get(item[merge_key])
                by_key[item[merge_key]] = merge_override(old, item) if old else copy.deepcopy(item)
            merged[key] = list(by_key.values())
        elif key in UNION_LISTS and isinstance(current, list) and isinstance(value, list):
            merged[key] = current + [copy.deepcopy(v) for v in value if v not in current]
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def check_override(override: Mapping[str, Any]) -> None:
    """The override on its own, held to the pod's types and to Kubernetes' validation: its
    metadata, tolerations, volumes, images and security contexts."""
    argument = ARGUMENT
    pod_schema.check(argument, override, pod_schema.POD_TEMPLATE, partial=True)
    metadata = override.get("metadata") or {}
    syntax.labels(f"{argument} metadata.labels", metadata.get("labels") or {})
    syntax.annotation_values(f"{argument} metadata.annotations", metadata.get("annotations") or {})
    pod = override.get("spec") or {}
    syntax.tolerations(pod.get("tolerations") or (), f"{argument} spec.tolerations")
    for volume in pod.get("volumes") or ():
        syntax.volume_source(f"{argument} spec.volumes", volume)
    for kind in ("initContainers", "containers"):
        for container in pod.get(kind) or ():
            where = f"{argument} spec.{kind}[{container.get('name')!r}]"
            if "image" in container:
                image_reference(f"{where}.image", container["image"])
            if context := container.get("securityContext"):
                syntax.security_context(f"{where}.securityContext", context)


def refuse_conflicts(generated: Mapping[str, Any], override: Mapping[str, Any]) -> None:
    """A ValueError naming ``pod_template_override`` and the provider's value where the
    override contradicts what the generated pod template needs."""
    spec, wanted = generated.get("spec") or {}, override.get("spec") or {}
    if not isinstance(wanted, Mapping):
        return  # the schema check names it
    policy = wanted.get("restartPolicy")
    if policy is not None and policy != RESTART_POLICY:
        raise ValueError(
            f"{ARGUMENT} sets spec.restartPolicy={policy!r}; the provider's pods use "
            f"{RESTART_POLICY!r}: JobSet restarts the slice (max_restarts, restart_strategy), "
            "and a pod the kubelet restarted itself would hide its failure from JobSet."
        )
    volumes = {v.get("name"): v for v in spec.get("volumes") or ()}
    for volume in wanted.get("volumes") or ():
        name = volume.get("name") if isinstance(volume, Mapping) else None
        if name in volumes and volumes[name] != merge_override(volumes[name], volume):
            raise ValueError(
                f"{ARGUMENT} redefines the volume {name!r}, which the provider declares for "
                f"its own use ({_source(volumes[name])}): give yours another name."
            )
    containers = {c.get("name"): c for c in spec.get("containers") or ()}
    for container in wanted.get("containers") or ():
        if not isinstance(container, Mapping) or container.get("name") not in containers:
            continue
        mine = containers[container["name"]]
        env = {e.get("name") for e in mine.get("env") or ()}
        for entry in container.get("env") or ():
            if isinstance(entry, Mapping) and entry.get("name") in env:
                raise ValueError(
                    f"{ARGUMENT} sets env {entry['name']!r} on container {mine['name']!r}, "
                    "which the provider already sets there (the JAX coordination, the "
                    "runtime's call, or this task's env=): give it through env= once, or "
                    "not at all for the provider's own names."
                )
        mounts = {m.get("mountPath"): m.get("name") for m in mine.get("volumeMounts") or ()}
        for mount in container.get("volumeMounts") or ():
            path = mount.get("mountPath") if isinstance(mount, Mapping) else None
            if path in mounts and mounts[path] != mount.get("name"):
                raise ValueError(
                    f"{ARGUMENT} mounts {mount.get('name')!r} at {path!r}, where the provider "
                    f"mounts its volume {mounts[path]!r}: mount yours at another path."
                )


def _source(volume: Mapping[str, Any]) -> str:
    kinds = [k for k in volume if k != "name"]
    return ", ".join(kinds) or "no source"


def _keyed(value: object, key: str) -> TypeGuard[list[Any]]:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(i, Mapping) and key in i for i in value)
    )
