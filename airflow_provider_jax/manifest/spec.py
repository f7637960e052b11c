"""What a JAX job's manifest depends on, checked: :class:`JaxJobSpec`. Pure: no I/O.

Every value is checked when the spec is made, so a bad one fails before anything is created,
with a message that names the argument.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.arguments import image_reference, is_template
from airflow_provider_jax.manifest import dynamic_slicing, pod_schema
from airflow_provider_jax.manifest import kubernetes_syntax as syntax
from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.manifest.accelerators.model import GpuDirect
from airflow_provider_jax.manifest.accelerators.tpu import check_multislice
from airflow_provider_jax.manifest.capacity import (
    Capacity,
    PodFields,
    capacity_fields,
    placement_annotations,
)
from airflow_provider_jax.manifest.capacity_choices import COMPUTE_CLASS_LABEL, CapacityChoices
from airflow_provider_jax.manifest.coordination import (
    DEFAULT_MEGASCALE_PORT,
    RESERVED_ENV,
    Coordination,
    coordinator_port_for,
)
from airflow_provider_jax.manifest.data_inputs import (
    FUSE_ANNOTATIONS,
    Data,
    fuse_mount,
    fuse_volume,
)
from airflow_provider_jax.manifest.failure_policy import DEFAULT_MAX_RESTARTS, check_exit_codes
from airflow_provider_jax.manifest.in_place_restart import (
    AGENT_IMAGE_EXTRA,
    AGENT_RELEASE,
    DEFAULT_RESTART_STRATEGY,
    check_restart_strategy,
)
from airflow_provider_jax.manifest.local_checkpoints import MOUNT_PATH as LOCAL_MOUNT_PATH
from airflow_provider_jax.manifest.local_checkpoints import VOLUME as LOCAL_VOLUME
from airflow_provider_jax.manifest.local_checkpoints import check_fits
from airflow_provider_jax.manifest.named_storage import Storage, storage_annotations
from airflow_provider_jax.manifest.names import check_name, rjob_name
from airflow_provider_jax.manifest.pathways import Pathways
from airflow_provider_jax.manifest.pod_override import check_override
from airflow_provider_jax.manifest.secret_refs import SecretRef, env_names

# GKE's largest clusters: 65,000 nodes (https://cloud.google.com/kubernetes-engine/quotas).
MAX_HOSTS = 65_000
MAX_ENV_STRING = 128 * 1024 - 1  # Linux's MAX_ARG_STRLEN, "NAME=value" and its NUL
MAX_ENV_TOTAL = 1024 * 1024
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


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
    restart_strategy: str = DEFAULT_RESTART_STRATEGY  # in_place_restart.py
    restart_agent_image: str | None = None  # JobSet's agent, for "in_place" on Kubernetes
    local_checkpoint_size: str | None = None  # the host-local tier (local_checkpoints.py)
    multi_tier_checkpointing: bool = False  # GKE's MTC volume for that tier
    termination_grace_period: int | None = None  # seconds from SIGTERM to SIGKILL
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str | None = None
    queue_name: str | None = None
    capacity: CapacityChoices = field(default_factory=CapacityChoices)
    capacity_choice: int = 0  # which of capacity.choices this JobSet asks for
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
    pathways: Pathways | None = None  # single controller (pathways.py); None: one per host
    data_inputs: Sequence[Data] = ()  # fuse=True inputs: a GCS FUSE volume each (data_inputs.py)
    storage: Sequence[Storage] = ()  # claims and buckets by name (named_storage.py)
    identity_provider: str | None = None  # the GKE cluster's, for FUSE in hostNetwork pods
    # Made at parse, before Jinja runs: a value that is still a template is checked once
    # rendered, when the task builds its spec again.
    unrendered: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        _positive_int("num_slices", self.num_slices)
        if self.num_processes > MAX_HOSTS:
            raise ValueError(
                f"this job needs {self.num_processes} hosts (num_slices x hosts per slice, or "
                f"num_nodes); a GKE cluster has at most {MAX_HOSTS} nodes "
                "(https://cloud.google.com/kubernetes-engine/quotas)."
            )
        self._check_kubernetes_syntax()
        image_reference("image", self.image)
        if isinstance(self.command, str) or not self.command:
            raise ValueError(f"command must be a non-empty list of strings, got {self.command!r}.")
        if not all(isinstance(a, str) for a in self.command):
            raise ValueError(
                f"every command argument must be a string, got {list(self.command)!r}."
            )
        if any("\0" in a for a in self.command):
            raise ValueError("a command argument holds a NUL byte, which no process can be given.")
        env_bytes = 0
        for key, value in self.env.items():
            if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
                raise ValueError(f"env name {key!r} is not a valid environment variable name.")
            if not isinstance(value, str):
                raise ValueError(
                    f"env value for {key!r} must be a string, got {type(value).__name__} {value!r}."
                )
            if "\0" in value:
                raise ValueError(
                    f"env value for {key!r} holds a NUL byte, which no process can be given "
                    "(the environment is C strings)."
                )
            size = len(f"{key}={value}".encode())
            env_bytes += size
            if size > MAX_ENV_STRING:
                raise ValueError(
                    f"env value for {key!r} is {len(value.encode())} bytes; a process's "
                    f"environment holds at most {MAX_ENV_STRING} bytes per variable (Linux's "
                    "MAX_ARG_STRLEN). Put large data in output_dir or GCS and pass its path."
                )
        if env_bytes > MAX_ENV_TOTAL:
            raise ValueError(
                f"env and the function's arguments come to {env_bytes} bytes of environment; a "
                f"process can be given at most {MAX_ENV_TOTAL} here (Linux's ARG_MAX is 2 MiB "
                "for argv and env together, and the JobSet must stay under the API server's "
                "object limit). Put large data in output_dir or GCS and pass its path."
            )
        secret_env = env_names(self.secrets)
        if clash := RESERVED_ENV & (set(self.env) | secret_env):
            raise ValueError(
                f"env sets {sorted(clash)}, which the provider sets for every process."
            )
        if both := secret_env & set(self.env):
            raise ValueError(f"{sorted(both)} come from both env and secrets; pick one.")
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, int):
            raise ValueError(f"max_restarts must be an integer >= 0, got {self.max_restarts!r}.")
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {self.max_restarts}.")
        check_exit_codes(self.restart_on_exit_codes)
        check_restart_strategy(self.restart_strategy, pathways=self.pathways is not None)
        if self.restart_strategy == "in_place" and not self.restart_agent_image:
            raise ValueError(
                "restart_strategy='in_place' needs JobSet's in-place restart agent image, which "
                f"JobSet {AGENT_RELEASE} does not publish: build its cmd/in-place-restart-agent "
                f"and name the image in the Kubernetes connection's extra "
                f"{AGENT_IMAGE_EXTRA!r}, or in [jax] {AGENT_IMAGE_EXTRA} (docs/recovery.md)."
            )
        if self.local_checkpoint_size is not None:
            if self.pathways is not None:
                raise ValueError(
                    "local_checkpoint_size does not go with pathways=: the Pathways workers "
                    "run no program of their own to write the local tier."
                )
            limit = (self.resources.get("limits") or {}).get("memory")
            check_fits(self.local_checkpoint_size, self.accelerator, limit)
        for name in ("active_deadline_seconds", "termination_grace_period"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        for argument in ("coordinator_port", "megascale_port"):
            port = getattr(self, argument)
            bad = isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536
            if port is not None and bad:
                raise ValueError(f"{argument} must be a TCP port (1-65535), got {port!r}.")
        if self.host_network not in (None, True, False):
            raise ValueError(
                f"host_network must be True, False or None, got {self.host_network!r}."
            )
        if self.gpu_networking not in ("auto", "none"):
            raise ValueError(
                f"gpu_networking must be 'auto' or 'none', got {self.gpu_networking!r}."
            )
        check_multislice(self.accelerator, self.num_slices)
        if self.pathways is not None:
            self.pathways.check(self.accelerator, self.num_slices)
        check_name(self.name, self.accelerator, self.num_slices, self.pathways is not None)
        for item in self.storage:
            item.check_shared(1 if self.pathways else self.num_processes)
        for choice in self.capacity.choices:  # raises when a capacity cannot work
            self._capacity_fields(choice)
        placement_annotations(self.placement, self.accelerator, self.num_slices, self.queue_name)
        if self.accelerator.dynamic_slicing:
            dynamic_slicing.check(self)

    def _check_kubernetes_syntax(self) -> None:
        """What Kubernetes would refuse (or Kueue ignore), refused first with the argument's
        name. Jinja templates are skipped while ``unrendered``."""

        def real(value: Any) -> bool:
            return not (self.unrendered and is_template(value))

        def literal(values: Mapping[Any, Any]) -> dict[Any, Any]:
            return {k: v for k, v in values.items() if real(k) and real(v)}

        if real(self.namespace):
            syntax.dns1123_label("namespace", self.namespace)
        syntax.labels("labels", literal(self.labels))
        syntax.labels("node_selector", literal(self.node_selector))
        syntax.annotation_values("annotations", literal(self.annotations))
        syntax.container_resources(self.resources)
        syntax.tolerations(self.tolerations)
        syntax.image_pull_policy(self.image_pull_policy)
        self._check_nested()
        syntax.volumes(
            [*self.volumes, *self.data_volumes, *self._override_volumes],
            [*self.volume_mounts, *self.data_mounts],
        )
        syntax.non_negative_int("ttl_seconds_after_finished", self.ttl_seconds_after_finished)
        for argument in ("service_account_name", "priority_class_name"):
            if (value := getattr(self, argument)) is not None and real(value):
                syntax.dns1123_subdomain(argument, value)
        if self.queue_name is not None and real(self.queue_name):  # Kueue's queue-name label
            syntax.label_value("queue_name", self.queue_name)

    def _check_nested(self) -> None:
        """Whole Kubernetes objects handed to us, held to the pod's own types, then to the
        rules Kubernetes' validation adds to them (ranges, exclusive fields, one source)."""
        if self.security_context != SAFE_SECURITY_CONTEXT:  # the default needs no schema read
            context = self.security_context
            pod_schema.check("security_context", context, pod_schema.SECURITY_CONTEXT)
            syntax.security_context("security_context", context)
        pod_schema.check_each("volumes", self.volumes, pod_schema.VOLUME)
        for volume in self.volumes:
            syntax.volume_source("volumes", volume)
        pod_schema.check_each("volume_mounts", self.volume_mounts, pod_schema.VOLUME_MOUNT)
        pod_schema.check_each("tolerations", self.tolerations, pod_schema.TOLERATION)
        if self.pod_template_override:
            check_override(self.pod_template_override)
        self._check_provider_names()

    def _check_provider_names(self) -> None:
        """A volume or mount path the provider uses itself, given by another argument, would
        make an invalid pod: refused here, naming both."""
        if self.local_checkpoint_size is None:
            return
        owned = f"local_checkpoint_size's tier (volume {LOCAL_VOLUME!r} at {LOCAL_MOUNT_PATH!r})"
        for volume in [*self.volumes, *self._override_volumes]:
            if volume.get("name") == LOCAL_VOLUME:
                raise ValueError(
                    f"volumes: {LOCAL_VOLUME!r} is the name of {owned}: give yours another."
                )
        for mount in self.volume_mounts:
            if "/" + str(mount.get("mountPath", "")).strip("/") == LOCAL_MOUNT_PATH:
                raise ValueError(
                    f"volume_mounts: {mount.get('name')!r} is mounted at {LOCAL_MOUNT_PATH!r}, "
                    f"the path of {owned}: mount it elsewhere."
                )

    @property
    def _override_volumes(self) -> list[Mapping[str, Any]]:
        """The volumes ``pod_template_override`` declares (its mounts may name them)."""
        return list(((self.pod_template_override or {}).get("spec") or {}).get("volumes") or [])

    @property
    def data_volumes(self) -> list[dict[str, Any]]:
        """The GCS FUSE volumes of the ``fuse=True`` inputs (one per data set) and the
        ``storage`` volumes, on the pods that run the program."""
        host_network = self.uses_host_network or self.pathways is not None
        unique = {d.volume_name: d for d in self.data_inputs}.values()
        volumes = [fuse_volume(d, host_network, self.identity_provider) for d in unique]
        return volumes + [s.volume(host_network, self.identity_provider) for s in self.storage]

    @property
    def data_mounts(self) -> list[dict[str, Any]]:
        unique = {d.volume_name: d for d in self.data_inputs}.values()
        return [fuse_mount(d) for d in unique] + [s.mount() for s in self.storage]

    @property
    def data_annotations(self) -> dict[str, str]:
        """What makes GKE add the FUSE (or Parallelstore) sidecar to those pods."""
        fuse = dict(FUSE_ANNOTATIONS) if self.data_inputs else {}
        return fuse | storage_annotations(tuple(self.storage))

    @property
    def capacity_fields(self) -> PodFields:
        return self._capacity_fields(self.capacity.rendered(self.capacity_choice))

    def _capacity_fields(self, capacity: Capacity) -> PodFields:
        compute_class = self.capacity.compute_class
        return capacity_fields(
            capacity,
            self.accelerator,
            queue_name=self.queue_name,
            max_run_s=self.active_deadline_seconds,
            node_selector=self.node_selector,
            extra_selector={COMPUTE_CLASS_LABEL: compute_class} if compute_class else None,
            flex_start_by_kueue=self.capacity.by_kueue and self.capacity.asks_flex_start,
        )

    @property
    def grace_fields(self) -> dict[str, int]:
        """The pod-spec key of ``termination_grace_period``, for every pod, when given."""
        grace = self.termination_grace_period
        return {} if grace is None else {"terminationGracePeriodSeconds": grace}

    @property
    def retention_fields(self) -> dict[str, int]:
        """The JobSet-spec key of ``ttl_seconds_after_finished``, when given."""
        ttl = self.ttl_seconds_after_finished
        return {} if ttl is None else {"ttlSecondsAfterFinished": ttl}

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
    def gpu_direct(self) -> GpuDirect | None:
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
