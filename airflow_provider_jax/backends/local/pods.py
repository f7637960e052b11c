"""Expand a JobSet manifest into the pods Kubernetes would create, with their resolved env.

Shared by the local backend and the test cluster's kubelet, so both see exactly what a real
pod would see: downward-API values from the pod's labels and annotations, and Kubernetes'
``$(VAR)`` expansion in env values, command and args.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax.manifest.accelerators.model import GPU_RESOURCE, TPU_RESOURCE
from airflow_provider_jax.manifest.jobset_api import (
    COMPLETION_INDEX_ANNOTATION,
    JOB_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT_LABEL,
)
from airflow_provider_jax.manifest.provider_keys import TERMINATION_MESSAGE_PATH
from airflow_provider_jax.runtime.messages import host_tag

_FIELD_PATH = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
_REFERENCE = re.compile(r"\$\$|\$\(([^)]*)\)")  # "$$", or "$(" up to the first ")"
_ACCELERATOR_RESOURCES = (TPU_RESOURCE, GPU_RESOURCE)
# A Secret's data by its name, as the kubelet reads it; KeyError when there is no such Secret.
SecretSource = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True)
class PodPlan:
    """One pod of a JobSet: where it sits and what it runs."""

    name: str
    slice_index: int
    host_index: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    argv: list[str]
    env: dict[str, str]
    chips: int
    termination_message_path: str
    accelerator_resource: str | None = None  # what the chips are: google.com/tpu, nvidia.com/gpu

    @property
    def tag(self) -> str:
        """``[slice/host]``, how every log line and error names this pod."""
        return host_tag(self.slice_index, self.host_index)


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' variable expansion: ``$(VAR)`` from ``env``, ``$$`` to ``$``; an unknown
    reference stays as written. One regular-expression pass: an env value may be the whole
    runtime bundle, and every pod's start waits on this."""

    def replace(ref: re.Match[str]) -> str:
        if ref[0] == "$$":
            return "$"
        return env.get(ref[1], ref[0])

    return _REFERENCE.sub(replace, text)


def _field_value(path: str, labels: Mapping[str, str], annotations: Mapping[str, str]) -> str:
    match = _FIELD_PATH.fullmatch(path)
    if match:
        source = labels if match[1] == "labels" else annotations
        return source.get(match[2], "")
    raise ValueError(f"unsupported downward-API fieldPath {path!r}")


def resolve_env(
    container: Mapping[str, Any],
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    secrets: SecretSource | None = None,
) -> dict[str, str]:
    """The env a container sees, as the kubelet builds it: ``envFrom`` first, then ``env`` in
    declaration order. Without ``secrets``, values from Secrets are left out (for callers that
    only need a pod's identity, as the JobSet controller does)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if secrets is not None and "secretRef" in source:
            env.update(secrets(source["secretRef"]["name"]))
    for item in container.get("env", []):
        value_from = item.get("valueFrom", {})
        if "value" in item:
            env[item["name"]] = expand(item["value"], env)
        elif "fieldRef" in value_from:
            env[item["name"]] = _field_value(
                value_from["fieldRef"]["fieldPath"], labels, annotations
            )
        elif "secretKeyRef" in value_from:
            if secrets is not None:
                ref = value_from["secretKeyRef"]
                data = secrets(ref["name"])
                if ref["key"] not in data:
                    raise KeyError(f"secret {ref['name']!r} has no key {ref['key']!r}")
                env[item["name"]] = data[ref["key"]]
        else:
            raise ValueError(
                f"env {item['name']!r}: only values, fieldRefs and secretKeyRefs run outside a "
                "cluster"
            )
    return env


def _accelerator(container: Mapping[str, Any]) -> tuple[str | None, int]:
    """The accelerator resource the container asks for, and how many (none: one CPU)."""
    limits = container.get("resources", {}).get("limits", {})
    return next(((r, int(limits[r])) for r in _ACCELERATOR_RESOURCES if r in limits), (None, 1))


def plan_pods(
    manifest: Mapping[str, Any], restart_attempt: int = 0, secrets: SecretSource | None = None
) -> list[PodPlan]:
    """Every pod of the JobSet, slice-major, with JobSet's labels and annotations applied,
    and its env resolved (Secrets from ``secrets``)."""
    name = manifest["metadata"]["name"]
    pods: list[PodPlan] = []
    for rjob in manifest["spec"]["replicatedJobs"]:
        job_spec = rjob["template"]["spec"]
        template = job_spec["template"]
        container = template["spec"]["containers"][0]
        resource, chips = _accelerator(container)
        for slice_index in range(rjob.get("replicas", 1)):
            for host_index in range(job_spec.get("completions", 1)):
                labels = {
                    **template.get("metadata", {}).get("labels", {}),
                    JOBSET_NAME_LABEL: name,
                    REPLICATED_JOB_LABEL: rjob["name"],
                    JOB_INDEX_LABEL: str(slice_index),
                    RESTART_ATTEMPT_LABEL: str(restart_attempt),
                }
                annotations = {
                    **template.get("metadata", {}).get("annotations", {}),
                    COMPLETION_INDEX_ANNOTATION: str(host_index),
                }
                env = resolve_env(container, labels, annotations, secrets)
                argv = [expand(a, env) for a in container.get("command", [])]
                argv += [expand(a, env) for a in container.get("args", [])]
                pods.append(
                    PodPlan(
                        name=f"{name}-{rjob['name']}-{slice_index}-{host_index}",
                        slice_index=slice_index,
                        host_index=host_index,
                        labels=labels,
                        annotations=annotations,
                        argv=argv,
                        env=env,
                        chips=chips,
                        termination_message_path=container.get(
                            "terminationMessagePath", TERMINATION_MESSAGE_PATH
                        ),
                        accelerator_resource=resource,
                    )
                )
    return pods
