"""Build a ``jobset.x-k8s.io/v1alpha2`` JobSet for a multi-host JAX job. Pure: no I/O.

One replicated job holds ``num_slices`` Jobs (one per TPU slice, or one for the GPU nodes), each
with ``hosts`` indexed pods. Every pod learns its place from the downward API and computes its
JAX process id in a tiny ``sh`` prelude, because Kubernetes cannot do arithmetic in env values.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.jobset.api import (
    API_VERSION,
    CONTAINER_NAME,
    EXCLUSIVE_TOPOLOGY_ANNOTATION,
    KUEUE_QUEUE_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NODEPOOL_LABEL,
    TERMINATION_MESSAGE_PATH,
)
from airflow_provider_jax.jobset.capacity import placement_annotations
from airflow_provider_jax.jobset.coordination import (
    PRELUDE_ARGV0,
    PROCESS_ID_PRELUDE,
    coordination_env,
)
from airflow_provider_jax.jobset.failure_policy import CODE_ERROR_RULE, pod_failure_policy
from airflow_provider_jax.jobset.gpu_direct import decorations
from airflow_provider_jax.jobset.pod_override import merge_override
from airflow_provider_jax.jobset.secret_refs import render_env, secret_mounts, secret_volumes
from airflow_provider_jax.jobset.spec import JaxJobSpec

# A child Job past activeDeadlineSeconds fails the JobSet outright: no restart.
DEADLINE_RULE = {
    "name": "FailAtDeadline",
    "action": "FailJobSet",
    "onJobFailureReasons": ["DeadlineExceeded"],
}


def _container(spec: JaxJobSpec, gpu_direct: Mapping[str, Any] | None) -> dict[str, Any]:
    acc = spec.accelerator
    requests = {acc.resource_name: str(acc.chips_per_host), **spec.resources.get("requests", {})}
    limits = {acc.resource_name: str(acc.chips_per_host), **spec.resources.get("limits", {})}
    secret_env, env_from = render_env(spec.secrets)
    coordination = spec.coordination
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "command": ["/bin/sh", "-c", PROCESS_ID_PRELUDE, PRELUDE_ARGV0, *spec.command],
        "env": coordination_env(coordination)
        + [{"name": k, "value": v} for k, v in spec.env.items()]
        + secret_env,
        "resources": {"requests": requests, "limits": limits},
        "ports": [{"name": "jax-coord", "containerPort": coordination.port}],
        "terminationMessagePath": TERMINATION_MESSAGE_PATH,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if spec.image_pull_policy:
        container["imagePullPolicy"] = spec.image_pull_policy
    if spec.security_context:
        container["securityContext"] = copy.deepcopy(dict(spec.security_context))
    if env_from:
        container["envFrom"] = env_from
    mounts = [dict(m) for m in spec.volume_mounts] + secret_mounts(spec.secrets)
    if gpu_direct:
        container["env"] += gpu_direct["env"]
        mounts += gpu_direct["volume_mounts"]
    if mounts:
        container["volumeMounts"] = mounts
    return container


def _pod_template(spec: JaxJobSpec) -> dict[str, Any]:
    acc = spec.accelerator
    extra = decorations(spec.gpu_direct, spec.gpu_networks) if spec.gpu_direct else None
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": {**acc.node_selector, **spec.node_selector},
        "tolerations": [
            {"key": acc.resource_name, "operator": "Exists", "effect": "NoSchedule"},
            *(dict(t) for t in spec.tolerations),
        ],
        "containers": [_container(spec, extra)],
    }
    if spec.service_account_name:
        pod_spec["serviceAccountName"] = spec.service_account_name
    if spec.priority_class_name:
        pod_spec["priorityClassName"] = spec.priority_class_name
    if spec.termination_grace_period is not None:
        pod_spec["terminationGracePeriodSeconds"] = spec.termination_grace_period
    if spec.uses_host_network:
        # Slice-to-slice (DCN) traffic on the node's NICs, as xpk runs TPU and GPU jobs; DNS
        # stays the cluster's, so the leader's name still resolves.
        pod_spec["hostNetwork"] = True
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    volumes = [dict(v) for v in spec.volumes] + secret_volumes(spec.secrets)
    capacity = spec.capacity_fields
    pod_spec["nodeSelector"].update(capacity.node_selector)
    pod_spec["tolerations"] += capacity.tolerations
    annotations = {
        **capacity.annotations,
        **placement_annotations(spec.placement, acc, spec.num_slices, spec.queue_name),
        **spec.annotations,
    }
    if extra:
        volumes += extra["volumes"]
        pod_spec["tolerations"] += extra["tolerations"]
        if extra["init_containers"]:
            pod_spec["initContainers"] = extra["init_containers"]
        annotations = {**extra["annotations"], **annotations}
    if volumes:
        pod_spec["volumes"] = volumes
    template = {"metadata": {"labels": dict(spec.labels)}, "spec": pod_spec}
    if annotations:
        template["metadata"]["annotations"] = annotations
    if spec.pod_template_override:
        overrides = (spec.pod_template_override.get("spec") or {}).get("containers") or []
        if any(c.get("name") == CONTAINER_NAME and "securityContext" in c for c in overrides):
            # Replaced, not merged: privileged=true beside our allowPrivilegeEscalation=false
            # is a pod the API server rejects.
            template["spec"]["containers"][0].pop("securityContext", None)
        template = merge_override(template, spec.pod_template_override)
    return template


def build_jobset(spec: JaxJobSpec) -> dict[str, Any]:
    """Render the JobSet manifest for ``spec``."""
    acc = spec.accelerator
    # Always ours: the trigger's shared watch selects on this label, so a JobSet without it
    # would never be seen finishing.
    labels = {**spec.labels, MANAGED_BY_LABEL: MANAGED_BY}
    annotations = dict(spec.annotations)
    if acc.kind == "tpu" and acc.multi_host:
        # One slice per node pool: a multi-host slice must not straddle two.
        annotations[EXCLUSIVE_TOPOLOGY_ANNOTATION] = NODEPOOL_LABEL
    jobset_spec: dict[str, Any] = {
        "network": {"enableDNSHostnames": True, "subdomain": spec.name},
        # A bug fails the JobSet at once; disruptions restart it (failure_policy.py).
        "failurePolicy": {"maxRestarts": spec.max_restarts, "rules": [dict(CODE_ERROR_RULE)]},
        "replicatedJobs": [
            {
                "name": spec.replicated_job_name,
                "replicas": spec.num_slices,
                "template": {
                    "metadata": {"labels": dict(spec.labels)},
                    "spec": {
                        "parallelism": acc.hosts,
                        "completions": acc.hosts,
                        "completionMode": "Indexed",
                        "backoffLimit": 0,
                        "podFailurePolicy": pod_failure_policy(
                            CONTAINER_NAME, spec.restart_on_exit_codes
                        ),
                        "template": _pod_template(spec),
                    },
                },
            }
        ],
    }
    if spec.active_deadline_seconds is not None:
        # Kubernetes itself stops a slice that outlives its deadline, with no restart: the
        # backstop for when Airflow cannot (no triggerer, a task marked failed meanwhile).
        job = jobset_spec["replicatedJobs"][0]["template"]["spec"]
        job["activeDeadlineSeconds"] = spec.active_deadline_seconds
        jobset_spec["failurePolicy"]["rules"].append(dict(DEADLINE_RULE))
    if spec.ttl_seconds_after_finished is not None:
        jobset_spec["ttlSecondsAfterFinished"] = spec.ttl_seconds_after_finished
    if spec.queue_name:
        labels[KUEUE_QUEUE_LABEL] = spec.queue_name
        jobset_spec["suspend"] = True  # Kueue admits (unsuspends) it when quota allows
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": API_VERSION, "kind": "JobSet", "metadata": metadata, "spec": jobset_spec}
