"""Build a ``jobset.x-k8s.io/v1alpha2`` JobSet for a multi-host JAX job. Pure: no I/O.

One replicated job holds ``num_slices`` Jobs (one per TPU slice, or one for the GPU nodes), each
with ``hosts`` indexed pods. Every pod learns its place from the downward API and computes its
JAX process id in a tiny ``sh`` prelude, because Kubernetes cannot do arithmetic in env values.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.accelerators import Accelerator
from airflow_provider_jax.accelerators.tpu import check_multislice
from airflow_provider_jax.capacity import (
    Capacity,
    PodFields,
    capacity_fields,
    placement_annotations,
)
from airflow_provider_jax.coordination import (
    DEFAULT_MEGASCALE_PORT,
    PRELUDE_ARGV0,
    PROCESS_ID_PRELUDE,
    RESERVED_ENV,
    Coordination,
    coordination_env,
    coordinator_port_for,
)
from airflow_provider_jax.failure_policy import (
    CODE_ERROR_RULE,
    DEFAULT_MAX_RESTARTS,
    check_exit_codes,
    pod_failure_policy,
)
from airflow_provider_jax.gpu_direct import decorations
from airflow_provider_jax.jobset_names import check_name, rjob_name
from airflow_provider_jax.pod_override import merge_override
from airflow_provider_jax.runtime.env import DEFAULT_TERMINATION_PATH
from airflow_provider_jax.secret_refs import (
    SecretRef,
    env_names,
    render_env,
    secret_mounts,
    secret_volumes,
)

API_VERSION = "jobset.x-k8s.io/v1alpha2"
GROUP, VERSION, PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
EXCLUSIVE_TOPOLOGY_ANNOTATION = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "airflow-provider-jax"
# Set on a JobSet just before a try defers on it: that try's trigger now owns its deletion.
DEFERRED_BY_TRY_ANNOTATION = "jax.airflow.apache.org/deferred-by-try"

CONTAINER_NAME = "jax"
TERMINATION_MESSAGE_PATH = DEFAULT_TERMINATION_PATH

# A child Job past activeDeadlineSeconds fails the JobSet outright: no restart.
DEADLINE_RULE = {
    "name": "FailAtDeadline",
    "action": "FailJobSet",
    "onJobFailureReasons": ["DeadlineExceeded"],
}
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
# An image reference as container runtimes parse it: [registry[:port]/]repo[:tag][@digest].
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_DOMAIN = (
    r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
)
_IMAGE_REFERENCE = re.compile(
    rf"^(?:{_IMAGE_DOMAIN}(?::[0-9]+)?/)?{_IMAGE_COMPONENT}(?:/{_IMAGE_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)


# No privilege escalation, no capabilities, the runtime's seccomp filter: the accelerators get
# their devices from the device plugins, so JAX needs none of these (docs/security.md).
SAFE_SECURITY_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@dataclass(frozen=True)
class JaxJobSpec:
    """Everything the manifest depends on. ``command`` runs after the env prelude."""

    name: str
    accelerator: Accelerator
    image: str
    command: Sequence[str]
    namespace: str = "default"
    num_slices: int = 1
    env: Mapping[str, str] = field(default_factory=dict)
    resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    service_account_name: str | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Mapping[str, Any]] = ()
    volumes: Sequence[Mapping[str, Any]] = ()
    volume_mounts: Sequence[Mapping[str, Any]] = ()
    max_restarts: int = DEFAULT_MAX_RESTARTS
    restart_on_exit_codes: Sequence[int] = ()
    termination_grace_period: int | None = None  # seconds from SIGTERM to SIGKILL
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str | None = None
    queue_name: str | None = None
    capacity: Capacity = field(default_factory=Capacity)
    placement: str | None = None
    pod_template_override: Mapping[str, Any] | None = None
    image_pull_policy: str | None = None
    coordinator_port: int | None = None
    megascale_port: int = DEFAULT_MEGASCALE_PORT
    host_network: bool | None = None
    gpu_networking: str = "auto"
    gpu_networks: Sequence[str] = ()
    secrets: Sequence[SecretRef] = ()
    security_context: Mapping[str, Any] = field(default_factory=lambda: SAFE_SECURITY_CONTEXT)

    def __post_init__(self) -> None:
        _positive_int("num_slices", self.num_slices)
        if not isinstance(self.image, str) or not self.image.strip():
            raise ValueError(
                "image must be a non-empty string, e.g. 'us-docker.pkg.dev/p/r/jax:tag'."
            )
        if not _IMAGE_REFERENCE.match(self.image):
            raise ValueError(
                f"image {self.image!r} is not a valid image reference (Kubernetes would stop at "
                "InvalidImageName): use [registry/]repository[:tag][@sha256:digest], with a "
                "lowercase repository, e.g. 'us-docker.pkg.dev/p/r/jax:tag'."
            )
        if isinstance(self.command, str) or not self.command:
            raise ValueError(f"command must be a non-empty list of strings, got {self.command!r}.")
        if not all(isinstance(a, str) for a in self.command):
            raise ValueError(
                f"every command argument must be a string, got {list(self.command)!r}."
            )
        for key, value in self.env.items():
            if not isinstance(key, str) or not _ENV_NAME.match(key):
                raise ValueError(f"env name {key!r} is not a valid environment variable name.")
            if not isinstance(value, str):
                raise ValueError(
                    f"env value for {key!r} must be a string, got {type(value).__name__} {value!r}."
                )
        secret_env = env_names(self.secrets)
        if clash := RESERVED_ENV & (set(self.env) | secret_env):
            raise ValueError(
                f"env sets {sorted(clash)}, which the provider sets for every process."
            )
        if clash := secret_env & set(self.env):
            raise ValueError(f"{sorted(clash)} come from both env and secrets; pick one.")
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int):
            raise ValueError(f"max_restarts must be an integer >= 0, got {self.max_restarts!r}.")
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {self.max_restarts}.")
        check_exit_codes(self.restart_on_exit_codes)
        for name in ("active_deadline_seconds", "termination_grace_period"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        for port in (self.coordinator_port, self.megascale_port):
            if port is not None and (not isinstance(port, int) or not 0 < port < 65536):
                raise ValueError(f"port {port!r} is not a valid TCP port.")
        if self.host_network not in (None, True, False):
            raise ValueError(
                f"host_network must be True, False or None, got {self.host_network!r}."
            )
        if self.gpu_networking not in ("auto", "none"):
            raise ValueError(
                f"gpu_networking must be 'auto' or 'none', got {self.gpu_networking!r}."
            )
        check_multislice(self.accelerator, self.num_slices)
        check_name(self.name, self.accelerator, self.num_slices)
        _ = self.capacity_fields  # raises when the capacity cannot work
        placement_annotations(self.placement, self.accelerator, self.num_slices, self.queue_name)

    @property
    def capacity_fields(self) -> PodFields:
        return capacity_fields(
            self.capacity,
            self.accelerator,
            queue_name=self.queue_name,
            max_run_s=self.active_deadline_seconds,
            node_selector=self.node_selector,
        )

    @property
    def replicated_job_name(self) -> str:
        return rjob_name(self.accelerator)

    @property
    def num_processes(self) -> int:
        return self.accelerator.hosts * self.num_slices

    @property
    def leader_host(self) -> str:
        """Stable DNS name of process 0: slice 0, pod 0. It resolves under hostNetwork too:
        JobSet sets the pods' subdomain to its headless Service whatever their network."""
        return f"{self.name}-{self.replicated_job_name}-0-0.{self.name}"

    @property
    def gpu_direct(self) -> str | None:
        """The GPUDirect stack this job's pods get (multi-node GPU jobs, when "auto")."""
        acc = self.accelerator
        wanted = self.gpu_networking == "auto" and acc.kind == "gpu" and acc.multi_host
        return acc.gpu_direct if wanted else None

    @property
    def uses_host_network(self) -> bool:
        """xpk's defaults: multi-host TPU slices and multi-node GPU jobs without GPUDirect
        (whose own NICs come through multi-networking instead) use the node's network."""
        if self.host_network is not None:
            return self.host_network
        return self.accelerator.multi_host and self.gpu_direct is None

    @property
    def coordination(self) -> Coordination:
        port = coordinator_port_for(
            self.name,
            self.coordinator_port,
            shared_host_network=self.uses_host_network and self.accelerator.shares_nodes,
        )
        return Coordination(
            leader_host=self.leader_host,
            port=port,
            num_processes=self.num_processes,
            hosts_per_slice=self.accelerator.hosts,
            num_slices=self.num_slices,
            megascale_port=self.megascale_port,
        )


def _positive_int(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}.")


def airflow_labels(
    dag_id: str, task_id: str, run_id: str, map_index: int | None, try_number: int
) -> dict[str, str]:
    """Label-safe Airflow identity, using the cncf provider's hashing for long values."""
    from airflow.providers.cncf.kubernetes.pod_generator import make_safe_label_value

    raw = {"dag_id": dag_id, "task_id": task_id, "run_id": run_id, "try_number": str(try_number)}
    if map_index is not None and map_index >= 0:
        raw["map_index"] = str(map_index)
    return {key: make_safe_label_value(value) for key, value in raw.items()} | {
        MANAGED_BY_LABEL: MANAGED_BY
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
