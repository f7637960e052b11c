"""Build the JobSet of a Pathways job, field for field as xpk 1.16 writes it. Pure: no I/O.

``pathways-head`` (one CPU pod: the resource manager and the IFRT proxy as sidecars, the user's
program as its main container) and ``worker`` (one Job per slice, a Pathways server on every
TPU host). Where we differ from xpk, and why:

- labels and annotations are ours (Airflow's identity, the shared watch's label), with
  Kueue's queue label only when a queue is named;
- the head's main container is ours: the runtime bundle, secrets, the security context;
- ``failurePolicy`` adds ``maxRestarts`` (xpk leaves 0, so only a worker pod's own restarts
  recover) and our rule that a bug in the head (its pod failure policy) fails at once;
- the pods get the task's service account, capacity and node selectors, so Workload Identity
  reaches the scratch bucket and Spot or reserved slices work as they do without Pathways.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.manifest.capacity import placement_annotations
from airflow_provider_jax.manifest.coordination import field_env
from airflow_provider_jax.manifest.failure_policy import CODE_ERROR_RULE, pod_failure_policy
from airflow_provider_jax.manifest.jobset_api import (
    API_VERSION,
    COORDINATOR_LABEL,
    EXCLUSIVE_TOPOLOGY_ANNOTATION,
    HOSTNAME_LABEL,
    JOB_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    NODEPOOL_LABEL,
    REPLICAS_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT_LABEL,
)
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.manifest.pathways import (
    BACKEND_TARGET,
    HEAD,
    HEAD_ENV,
    PROXY_CONTAINER,
    PROXY_PORT,
    RM_CONTAINER,
    RM_PORT,
    RM_SECOND_PORT,
    WORKER,
    WORKER_CONTAINER,
    WORKER_PORTS,
    instance_type,
)
from airflow_provider_jax.manifest.program import (
    DEADLINE_RULE,
    app_container,
    apply_override,
)
from airflow_provider_jax.manifest.provider_keys import CONTAINER_NAME, MANAGED_BY, MANAGED_BY_LABEL
from airflow_provider_jax.manifest.secret_refs import secret_volumes
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.runtime.env import PATHWAYS_ENV, RESTART_ATTEMPT_ENV

# JaxJobSpec's fields that a Pathways JobSet does not read, each with why (a test holds every
# other field to changing it; spec.py refuses a user's value that would be dropped here).
NOT_FOR_PATHWAYS: Mapping[str, str] = {
    "megascale_port": "no argument sets it, and Pathways' workers run megascale on the port "
    "xpk gives them, not the one the provider's multislice env names",
}
SHARED_TMP = "shared-tmp"
_SHARED_TMP_VOLUME = {"hostPath": {"path": "/tmp", "type": "DirectoryOrCreate"}, "name": SHARED_TMP}


def _label(key: str) -> str:
    return f"metadata.labels['{key}']"


def _annotation(key: str) -> str:
    return f"metadata.annotations['{key}']"


def _ports(*numbers: int) -> list[dict[str, Any]]:
    return [{"containerPort": n, "protocol": "TCP"} for n in numbers]


def _scratch(spec: JaxJobSpec) -> list[str]:
    scratch = spec.pathways.scratch_location if spec.pathways else None
    return [f"--gcs_scratch_location={scratch}"] if scratch else []


def _sidecars(spec: JaxJobSpec) -> list[dict[str, Any]]:
    """The IFRT proxy and the resource manager, xpk's two head containers."""
    pw = spec.pathways
    assert pw is not None
    proxy_args = [
        f"--server_port={PROXY_PORT}",
        f"--resource_manager_address=$({HEAD_ENV}):{RM_PORT}",
        *_scratch(spec),
    ]
    if pw.elastic_slices > 0:
        proxy_args.append(f"--num_elastic_slices={pw.elastic_slices}")
    proxy = {
        "name": PROXY_CONTAINER,
        "image": pw.proxy_image,
        "imagePullPolicy": "Always",
        "args": [*proxy_args, *pw.proxy_args],
        "env": [field_env(HEAD_ENV, _label(COORDINATOR_LABEL))],
        "ports": _ports(PROXY_PORT),
        "resources": {"limits": {"cpu": "16", "memory": "100G"}},
    }
    rm = {
        "name": RM_CONTAINER,
        "image": pw.server_image,
        "imagePullPolicy": "Always",
        "args": [
            f"--server_port={RM_PORT}",
            *_scratch(spec),
            "--node_type=resource_manager",
            f"--instance_count={spec.num_slices}",
            f"--instance_type={instance_type(spec.accelerator)}",
            *pw.server_args,
        ],
        "env": [
            field_env("REPLICATED_JOB_NAME", _annotation(REPLICATED_JOB_LABEL)),
            field_env("JOBSET_NAME", _annotation(JOBSET_NAME_LABEL)),
            field_env("HOST_ADDRESS", _label(COORDINATOR_LABEL)),
            {"name": "TPU_SKIP_MDS_QUERY", "value": "true"},
        ],
        "ports": _ports(RM_PORT, RM_SECOND_PORT),
        "resources": {"limits": {"cpu": "8", "memory": "32G"}},
    }
    for container in (proxy, rm):
        # A sidecar beside the user's program; headless, a main container restarted in place
        # (Kubernetes' container restart rules: the API server accepts it from 1.35).
        container["restartPolicy"] = "Always"
    return [proxy, rm]


def _head_pod(spec: JaxJobSpec) -> dict[str, Any]:
    pw = spec.pathways
    assert pw is not None
    pod: dict[str, Any] = {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "nodeSelector": dict(pw.head_node_selector),
    }
    if pw.headless:
        pod["containers"] = _sidecars(spec)
    else:
        env = [
            field_env(HEAD_ENV, _label(COORDINATOR_LABEL)),
            {"name": "JAX_PLATFORMS", "value": "proxy"},
            {"name": "XCLOUD_ENVIRONMENT", "value": "GCP"},
            {"name": "JAX_BACKEND_TARGET", "value": BACKEND_TARGET},
            {"name": PATHWAYS_ENV, "value": "1"},
            field_env(RESTART_ATTEMPT_ENV, _label(RESTART_ATTEMPT_LABEL)),
        ]
        pod["initContainers"] = _sidecars(spec)
        pod["containers"] = [app_container(spec, list(spec.command), env, spec.resources)]
    pod["restartPolicy"] = "Never"
    pod["volumes"] = [
        dict(_SHARED_TMP_VOLUME),
        *(dict(v) for v in spec.volumes),
        *spec.data_volumes,
    ]  # the program's data
    pod["volumes"] += secret_volumes(spec.secrets)
    if spec.service_account_name:
        pod["serviceAccountName"] = spec.service_account_name
    template = {"metadata": {"labels": dict(spec.labels)}, "spec": pod}
    if annotations := {**spec.data_annotations, **spec.annotations}:
        template["metadata"]["annotations"] = annotations
    return apply_override(template, spec)


def _head(spec: JaxJobSpec) -> dict[str, Any]:
    job: dict[str, Any] = {
        "backoffLimit": 0,
        "completionMode": "Indexed",
        "completions": 1,
        "parallelism": 1,
    }
    if not spec.pathways or not spec.pathways.headless:
        # A bug in the user's code fails the JobSet at once (CODE_ERROR_RULE), as without
        # Pathways; a disruption restarts it.
        job["podFailurePolicy"] = pod_failure_policy(CONTAINER_NAME, spec.restart_on_exit_codes)
    job["template"] = _head_pod(spec)
    return {
        "name": HEAD,
        "replicas": 1,
        "template": {
            "metadata": {"annotations": {EXCLUSIVE_TOPOLOGY_ANNOTATION: HOSTNAME_LABEL}},
            "spec": job,
        },
    }


def _worker_pod(spec: JaxJobSpec) -> dict[str, Any]:
    pw, acc = spec.pathways, spec.accelerator
    assert pw is not None
    capacity = spec.capacity_fields
    pod: dict[str, Any] = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}
    pod.update(spec.grace_fields)
    if spec.priority_class_name:
        pod["priorityClassName"] = spec.priority_class_name
    pod["nodeSelector"] = {**acc.node_selector, **spec.node_selector, **capacity.node_selector}
    pod["containers"] = [
        {
            "name": WORKER_CONTAINER,
            "image": pw.worker_image or pw.server_image,
            "imagePullPolicy": "Always",
            "args": [
                f"--server_port={WORKER_PORTS[0]}",
                f"--resource_manager_address=$({HEAD_ENV}):{RM_PORT}",
                *_scratch(spec),
                *pw.worker_args,
            ],
            "env": [
                {"name": "TPU_MIN_LOG_LEVEL", "value": "0"},
                {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "0"},
                {"name": "XCLOUD_ENVIRONMENT", "value": "GCP"},
                {"name": "MEGASCALE_GRPC_ENABLE_XOR_TRACER", "value": "false"},
                field_env("MEGASCALE_NUM_SLICES", _label(REPLICAS_LABEL)),
                field_env("JOBSET_NAME", _annotation(JOBSET_NAME_LABEL)),
                field_env("REPLICATED_JOB_NAME", _annotation(REPLICATED_JOB_LABEL)),
                field_env("MEGASCALE_SLICE_ID", _label(JOB_INDEX_LABEL)),
                field_env(HEAD_ENV, _label(COORDINATOR_LABEL)),
                field_env("MEGASCALE_COORDINATOR_ADDRESS", _label(COORDINATOR_LABEL)),
            ],
            "ports": _ports(*WORKER_PORTS),
            "resources": {"limits": {acc.resource_name: str(acc.chips_per_host)}},
            "volumeMounts": [{"mountPath": "/tmp", "name": SHARED_TMP}],
        }
    ]
    pod["restartPolicy"] = "OnFailure"
    pod["tolerations"] = [
        {"operator": "Exists", "key": acc.resource_name},
        *(dict(t) for t in spec.tolerations),
        *capacity.tolerations,
    ]
    pod["volumes"] = [dict(_SHARED_TMP_VOLUME)]
    if spec.service_account_name:
        pod["serviceAccountName"] = spec.service_account_name
    template: dict[str, Any] = {"metadata": {"labels": dict(spec.labels)}, "spec": pod}
    annotations = {
        **capacity.annotations,
        **placement_annotations(spec.placement, acc, spec.num_slices, spec.queue_name),
    }
    if annotations:
        template["metadata"]["annotations"] = annotations
    return template


def _workers(spec: JaxJobSpec) -> dict[str, Any]:
    pw, hosts = spec.pathways, spec.accelerator.hosts
    assert pw is not None
    # xpk's: each slice's workers may restart 4 times a host, or max_slice_restarts when elastic.
    backoff = pw.max_slice_restarts * hosts if pw.elastic_slices > 0 else hosts * 4
    job: dict[str, Any] = {
        "backoffLimit": backoff,
        "completionMode": "Indexed",
        "completions": hosts,
        "parallelism": hosts,
        "template": _worker_pod(spec),
    }
    if spec.active_deadline_seconds is not None:
        job["activeDeadlineSeconds"] = spec.active_deadline_seconds
    return {
        "name": WORKER,
        "replicas": spec.num_slices,
        "template": {
            "metadata": {"annotations": {EXCLUSIVE_TOPOLOGY_ANNOTATION: NODEPOOL_LABEL}},
            "spec": job,
        },
    }


def build_pathways_jobset(spec: JaxJobSpec) -> dict[str, Any]:
    """The Pathways JobSet for ``spec`` (``spec.pathways`` is set)."""
    pw = spec.pathways
    assert pw is not None
    labels = {**spec.labels, MANAGED_BY_LABEL: MANAGED_BY}
    rules = [dict(CODE_ERROR_RULE)]
    head = _head(spec)
    if spec.active_deadline_seconds is not None:
        head["template"]["spec"]["activeDeadlineSeconds"] = spec.active_deadline_seconds
        rules.append(dict(DEADLINE_RULE))
    jobset_spec: dict[str, Any] = {
        "coordinator": {"replicatedJob": HEAD},
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {
            "restartStrategy": "Recreate",
            "maxRestarts": spec.max_restarts,
            "rules": rules,
        },
        "replicatedJobs": [head, _workers(spec)],
        "startupPolicy": {"startupPolicyOrder": "InOrder"},
    }
    if not pw.headless:  # headless: the job runs until deleted or timed out
        jobset_spec["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [HEAD]}
    jobset_spec["suspend"] = bool(spec.queue_name)  # Kueue admits (unsuspends) it
    if spec.queue_name:
        labels[KUEUE_QUEUE_LABEL] = spec.queue_name
    jobset_spec.update(spec.retention_fields)
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace, "labels": labels}
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
    return {"apiVersion": API_VERSION, "kind": "JobSet", "metadata": metadata, "spec": jobset_spec}
