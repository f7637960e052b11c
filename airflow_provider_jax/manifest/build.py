"""Build a ``jobset.x-k8s.io/v1alpha2`` JobSet for a multi-host JAX job. Pure: no I/O.

One replicated job holds ``num_slices`` Jobs (one per TPU slice, or one for the GPU nodes), each
with ``hosts`` indexed pods. Every pod learns its place from the downward API and computes its
JAX process id in a tiny ``sh`` prelude, because Kubernetes cannot do arithmetic in env values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.manifest import (
    dynamic_slicing,
    in_place_restart,
    local_checkpoints,
    ownership,
)
from airflow_provider_jax.manifest.capacity import placement_annotations
from airflow_provider_jax.manifest.coordination import (
    PRELUDE_ARGV0,
    PROCESS_ID_PRELUDE,
    coordination_env,
)
from airflow_provider_jax.manifest.failure_policy import (
    CODE_ERROR_RULE,
    pod_failure_policy,
    restartable_codes,
)
from airflow_provider_jax.manifest.gpu_direct import decorations
from airflow_provider_jax.manifest.jobset_api import (
    API_VERSION,
    EXCLUSIVE_TOPOLOGY_ANNOTATION,
    NODEPOOL_LABEL,
)
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.manifest.pathways_build import build_pathways_jobset
from airflow_provider_jax.manifest.program import (
    DEADLINE_RULE,
    app_container,
    apply_override,
)
from airflow_provider_jax.manifest.provider_keys import CONTAINER_NAME, MANAGED_BY, MANAGED_BY_LABEL
from airflow_provider_jax.manifest.secret_refs import secret_volumes
from airflow_provider_jax.manifest.spec import SAFE_SECURITY_CONTEXT, JaxJobSpec
from airflow_provider_jax.runtime.env import RESTART_STRATEGY_ENV


def _container(spec: JaxJobSpec, gpu_direct: Mapping[str, Any] | None) -> dict[str, Any]:
    acc = spec.accelerator
    requests = {acc.resource_name: str(acc.chips_per_host), **spec.resources.get("requests", {})}
    limits = {acc.resource_name: str(acc.chips_per_host), **spec.resources.get("limits", {})}
    coordination = spec.coordination
    container = app_container(
        spec,
        ["/bin/sh", "-c", PROCESS_ID_PRELUDE, PRELUDE_ARGV0, *spec.command],
        coordination_env(coordination),
        {"requests": requests, "limits": limits},
        [{"name": "jax-coord", "containerPort": coordination.port}],
    )
    if gpu_direct:
        container["env"] += gpu_direct["env"]
        container["volumeMounts"] = container.get("volumeMounts", []) + gpu_direct["volume_mounts"]
    if spec.local_checkpoint_size:
        container["env"] += local_checkpoints.env()
        container["volumeMounts"] = [*container.get("volumeMounts", []), local_checkpoints.mount()]
    if spec.restart_strategy == "in_place":
        codes = restartable_codes(spec.restart_on_exit_codes)
        container.update(in_place_restart.program_restart_fields(codes))
        container["env"].append({"name": RESTART_STRATEGY_ENV, "value": "in_place"})
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
    pod_spec.update(spec.grace_fields)
    if spec.uses_host_network:
        # Slice-to-slice (DCN) traffic on the node's NICs, as xpk runs TPU and GPU jobs; DNS
        # stays the cluster's, so the leader's name still resolves.
        pod_spec["hostNetwork"] = True
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    volumes = [dict(v) for v in spec.volumes] + spec.data_volumes + secret_volumes(spec.secrets)
    capacity = spec.capacity_fields
    pod_spec["nodeSelector"].update(capacity.node_selector)
    pod_spec["tolerations"] += capacity.tolerations
    annotations = {
        **spec.data_annotations,
        **capacity.annotations,
        **placement_annotations(spec.placement, acc, spec.num_slices, spec.queue_name),
        **(dynamic_slicing.pod_annotations(acc) if acc.dynamic_slicing else {}),
        **spec.annotations,
    }
    init_containers = []
    if extra:
        volumes += extra["volumes"]
        pod_spec["tolerations"] += extra["tolerations"]
        init_containers += extra["init_containers"]
        annotations = {**extra["annotations"], **annotations}
    if spec.restart_strategy == "in_place":  # last: its barrier holds back only the program
        assert spec.restart_agent_image is not None  # JaxJobSpec checked it
        agent = in_place_restart.agent_sidecar(spec.restart_agent_image, SAFE_SECURITY_CONTEXT)
        init_containers.append(agent)
    if init_containers:
        pod_spec["initContainers"] = init_containers
    if spec.local_checkpoint_size:
        volumes.append(
            local_checkpoints.volume(spec.local_checkpoint_size, spec.multi_tier_checkpointing)
        )
    if volumes:
        pod_spec["volumes"] = volumes
    template = {"metadata": {"labels": dict(spec.labels)}, "spec": pod_spec}
    if annotations:
        template["metadata"]["annotations"] = annotations
    template = apply_override(template, spec)
    if acc.dynamic_slicing:
        dynamic_slicing.check_fill(template, acc)
    return template


def build_jobset(spec: JaxJobSpec) -> dict[str, Any]:
    """Render the JobSet manifest for ``spec``; a ValueError naming the argument where any
    path set a key the provider owns (``ownership.py``)."""
    jobset = _render(spec)
    ownership.check(jobset, _render(ownership.provider_only(spec)), spec)
    return jobset


def _render(spec: JaxJobSpec) -> dict[str, Any]:
    if spec.pathways is not None:
        return build_pathways_jobset(spec)
    acc = spec.accelerator
    # Always ours: the trigger's shared watch selects on this label, so a JobSet without it
    # would never be seen finishing.
    labels = {**spec.labels, MANAGED_BY_LABEL: MANAGED_BY}
    annotations = dict(spec.annotations)
    if acc.kind == "tpu" and acc.multi_host and not acc.dynamic_slicing:
        # One slice per node pool: a multi-host slice must not straddle two. (A dynamic
        # super-slice spans a pool per cube; sub-slices share their cube's pool.)
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
    if spec.restart_strategy == "in_place":
        jobset_spec["failurePolicy"]["restartStrategy"] = in_place_restart.JOBSET_STRATEGY
        jobset_spec["replicatedJobs"][0]["template"]["spec"].update(in_place_restart.job_fields())
    if spec.active_deadline_seconds is not None:
        # Kubernetes itself stops a slice that outlives its deadline, with no restart: the
        # backstop for when Airflow cannot (no triggerer, a task marked failed meanwhile).
        job = jobset_spec["replicatedJobs"][0]["template"]["spec"]
        job["activeDeadlineSeconds"] = spec.active_deadline_seconds
        jobset_spec["failurePolicy"]["rules"].append(dict(DEADLINE_RULE))
    jobset_spec.update(spec.retention_fields)
    if spec.queue_name:
        labels[KUEUE_QUEUE_LABEL] = spec.queue_name
        jobset_spec["suspend"] = True  # Kueue admits (unsuspends) it when quota allows
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": API_VERSION, "kind": "JobSet", "metadata": metadata, "spec": jobset_spec}
