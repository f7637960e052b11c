"""The operator both JAX operators share: render a JobSet, run it on a backend, return the
leader's result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator, conf

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import as_bool, one_of, positive_seconds, refuse_untemplated
from airflow_provider_jax.contract.backend import (
    BACKEND_TRAITS,
    BACKENDS,
    ON_FINISH_ACTIONS,
    BackendTraits,
    resolve_backend,
)
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.links.diagnostics import DebugDumpLink, ProfileLink
from airflow_provider_jax.links.jobset import JobSetLogsLink, JobSetWorkloadLink, KueueEventsLink
from airflow_provider_jax.links.tensorboard import TensorBoardLink
from airflow_provider_jax.manifest.accelerators import Accelerator
from airflow_provider_jax.manifest.capacity import queue_timeout_seconds
from airflow_provider_jax.manifest.capacity_choices import CapacityChoices
from airflow_provider_jax.manifest.failure_policy import DEFAULT_MAX_RESTARTS
from airflow_provider_jax.manifest.in_place_restart import DEFAULT_RESTART_STRATEGY
from airflow_provider_jax.manifest.named_storage import Storage
from airflow_provider_jax.manifest.secret_refs import as_secret_refs
from airflow_provider_jax.manifest.spec import SAFE_SECURITY_CONTEXT
from airflow_provider_jax.operators.argument_types import as_list, as_mapping
from airflow_provider_jax.operators.checkpoint_asset import with_checkpoint_outlet
from airflow_provider_jax.operators.execution import JobExecution
from airflow_provider_jax.operators.job_spec import JobSpecBuilder
from airflow_provider_jax.operators.lineage import LineageReporter
from airflow_provider_jax.operators.publish import (  # noqa: F401 - the XCom keys, re-exported
    JOBSET_NAME_XCOM_KEY,
    JOBSET_NAMESPACE_XCOM_KEY,
    LAST_REPORT_XCOM_KEY,
    RESUMED_FROM_XCOM_KEY,
    OutcomePublisher,
)
from airflow_provider_jax.operators.rendered_manifest import MANIFEST_FIELD, RenderedManifest
from airflow_provider_jax.operators.run_diagnostics import RunDiagnostics
from airflow_provider_jax.reporting.checkpoint_freshness import DEFAULT_WARN_AFTER
from airflow_provider_jax.reporting.host_logs import STREAM_LEADER

if TYPE_CHECKING:
    import datetime

    from airflow.sdk import Asset

    from airflow_provider_jax.manifest.pathways import Pathways


class JaxJobOperator(
    JobExecution,
    OutcomePublisher,
    LineageReporter,
    RenderedManifest,
    RunDiagnostics,
    JobSpecBuilder,
    BaseOperator,
):
    """Run a multi-host JAX program as a JobSet and return process 0's result.

    Give either ``command`` (any argv; the JAX coordination env is set for it) or
    ``entrypoint`` (``"package.module:function"``, called with ``entrypoint_kwargs`` after
    ``jax.distributed.initialize()``; its JSON return value on process 0 becomes the XCom).
    Use :class:`JaxTpuSliceOperator` or :class:`JaxGpuJobOperator`, which parse ``accelerator``.

    :param accelerator: the parsed accelerator (slice shape or GPU nodes).
    :param image: the container image; it must hold JAX for the accelerator. Default:
        ``[jax] default_image``; the local backend needs none. (templated)
    :param command: argv to run on every host instead of an entrypoint. (templated)
    :param entrypoint: ``"package.module:function"`` to call on every host. (templated)
    :param entrypoint_kwargs: JSON keyword arguments for it. (templated)
    :param num_slices: TPU slices (multislice over DCN); 1 for GPU jobs.
    :param env: extra environment variables, strings only. (templated)
    :param output_dir: ``gs://`` or an absolute path for checkpoints and large results;
        template it per run (``.../{{ ds_nodash }}``). (templated)
    :param checkpoint_asset: an ``Asset`` that gets an event when the task succeeds, with the
        newest finalized step of ``<output_dir>/checkpoints``, the leader's last report and the
        JobSet's name in its ``extra``; no event when there is no finalized step.
    :param initialize_distributed: call ``jax.distributed.initialize()`` first (not under Pathways).
    :param pathways: TPU only: run under Pathways, one process driving every chip of every
        slice: ``True`` or ``Pathways(...)`` (``docs/pathways.md``).
    :param pip_packages: packages to ``pip install`` in each process before the call.
    :param python: the interpreter in the image.
    :param name: the JobSet's name (default: derived from the task instance). (templated)
    :param namespace: the Kubernetes namespace. (templated)
    :param labels: extra labels on the JobSet and its pods. (templated)
    :param annotations: extra annotations on the JobSet and its pods. (templated)
    :param container_resources: ``{"requests": {...}, "limits": {...}}`` beside the accelerator's.
    :param service_account_name: the pods' Kubernetes service account (Workload Identity).
    :param node_selector: extra node selector terms.
    :param tolerations: extra tolerations.
    :param volumes: extra pod volumes.
    :param volume_mounts: extra container volume mounts.
    :param storage: claims (Filestore, Parallelstore, Lustre, PD) and GCS buckets by name,
        mounted on every host: a list of ``Storage(...)`` (``docs/data.md``).
    :param max_restarts: whole-slice restarts on disruptions (preemption, a lost or hung host,
        a death by signal) within one try; a bug in the code fails at once and spends none.
    :param restart_on_exit_codes: more exit codes (1-255) that mean "restart the slice", as
        xpk's ``--restart-on-exit-codes``; 42, 124 and 129-255 (deaths by signal) always do.
    :param restart_strategy: ``recreate`` (default: every pod recreated) or ``in_place``
        (healthy pods' containers restart where they are; JobSet's ``InPlaceRestart``).
    :param local_checkpoint_size: a per-host checkpoint tier in RAM of this size (``"64Gi"``),
        at ``runtime.local_checkpoint_dir()``; it survives in-place restarts.
    :param progress_timeout: seconds without a ``report()`` call after which a process counts
        as hung: it prints every thread's stack and exits 124, and the slice restarts. Armed at
        the first report, so start-up never trips it. Off (None) by default.
    :param total_steps: the run's length in steps: the task log then shows each report as
        ``step 1200/10000 (12%) · 3.1 steps/s · ETA 47m``; ``report(total_steps=...)`` in the
        code does the same. (templated)
    :param profile_steps: ``(start, count)``: every host captures a JAX profiler trace of
        these steps, as its ``report(step=...)`` calls count them, into
        ``<output_dir>/profiles/try-<n>/host-<i>/`` (TensorBoard's and XProf's layout); the
        "JAX profile" link opens it. At most 100 steps.
    :param debug_dump: XLA dumps its HLO modules on every host, and a failed host saves every
        thread's stack and its last log lines; all of it goes to
        ``<output_dir>/debug/try-<n>/host-<i>/`` before the pod exits (the "Debug dump" link).
    :param checkpoint_warn_after: on a multi-host job that checkpoints (into
        ``<output_dir>/checkpoints``), warn once in the task log when its work has gone this
        long (a timedelta or seconds) without a new finalized step, with what a failure would
        cost; None: never. Default 10 minutes.
    :param termination_grace_period: seconds from SIGTERM (preemption, eviction, a restart) to
        SIGKILL: the pods' ``terminationGracePeriodSeconds`` (Kubernetes' default: 30), the
        time a ``runtime.on_preemption`` hook has to save. Spot VMs give at most about 15 s.
    :param retry_on_code_error: whether Airflow retries the task after the code raised (a
        :class:`~airflow_provider_jax.exceptions.JaxCodeError`); disruptions always may retry.
    :param ttl_seconds_after_finished: let Kubernetes delete a finished JobSet after this long.
    :param priority_class_name: the pods' PriorityClass.
    :param queue_name: a Kueue LocalQueue; the JobSet is created suspended for Kueue to admit.
    :param queue_timeout: the longest wait for capacity, from creating the JobSet to
        ``queue_timeout_until``; past it the JobSet is deleted and the task fails with the
        last reason it waited for. ``execution_timeout`` still bounds the whole try.
    :param queue_timeout_until: ``running`` (every pod running; default) or ``admitted``
        (Kueue admitted the JobSet).
    :param capacity: where the nodes come from: ``on-demand`` (default), ``spot``,
        ``reservation:<name>`` or ``flex-start`` (Dynamic Workload Scheduler, through Kueue);
        or an ordered list of them: Kueue's flavors pick with ``queue_name``, else the
        provider tries each in turn (``docs/capacity.md``).
    :param capacity_wait: how long each choice of a capacity list may take to get every pod
        running before the provider deletes it and tries the next (default 10 minutes
        without ``queue_name``; with it, Kueue's flavor order decides unless this is given).
    :param compute_class: a GKE custom ComputeClass whose priorities pick the capacity.
    :param reservation_project: the project sharing the reservation, when not the cluster's.
    :param placement: Kueue topology-aware placement for GPU and multislice jobs: ``compact``,
        ``required:<level>`` or ``preferred:<level>`` (``block``, ``subblock``, ``host``,
        ``node``).
    :param pod_template_override: a pod template deep-merged over the generated one.
    :param image_pull_policy: ``Always``, ``IfNotPresent`` or ``Never``.
    :param coordinator_port: the JAX coordinator's port on process 0 (default: 8490, clear of
        libtpu's and JAX's own; derived from the JobSet name where a GPU node may be shared).
    :param host_network: run the pods on the node's network (default: multi-host TPU slices
        and multi-node GPU jobs without GPUDirect, as xpk does).
    :param gpu_networking: ``auto`` gives multi-node GPU pods their machine type's GPUDirect
        networking (TCPX, TCPXO or RDMA); ``none`` leaves plain pods.
    :param gpu_networks: the cluster's GKE networks for GPUDirect, eth0 first (default: the
        names GKE's GPUDirect guides create).
    :param secrets: Kubernetes Secrets by reference (``SecretRef`` or the cncf provider's
        ``Secret``): env vars, every key as env vars, or read-only volumes. Values never enter
        the manifest; a masked value in ``env`` or the arguments is refused.
    :param security_context: the container's securityContext (default: no privilege
        escalation, all capabilities dropped, RuntimeDefault seccomp; ``{}`` for none).
    :param backend: ``kubernetes`` or ``local`` (default: ``[jax] default_backend``).
    :param kubernetes_conn_id: the Kubernetes connection (when no GKE cluster is named).
    :param deferrable: wait in the triggerer, freeing the worker slot (default:
        ``[operators] default_deferrable``).
    :param on_finish_action: ``delete_jobset``, ``delete_succeeded_jobset`` or ``keep_jobset``.
    :param poll_interval: seconds between status reads when the identity may not watch.
    :param stream_logs: whose output the task log shows while the job runs: ``leader``
        (process 0), ``all`` (every host, ``[slice/host]``-prefixed) or ``none``.
    :param project_id: the GKE cluster's project.
    :param location: the GKE cluster's region or zone.
    :param cluster_name: a GKE cluster; its endpoint and CA are looked up through Google.
    :param gcp_conn_id: the Google connection (GKE tokens, ``gs://`` results).
    :param impersonation_chain: service accounts to impersonate with ``gcp_conn_id``.
    """

    template_fields: Sequence[str] = (
        "image",
        "command",
        "entrypoint",
        "entrypoint_kwargs",
        "env",
        "output_dir",
        "name",
        "labels",
        "annotations",
        "namespace",
        "total_steps",
        MANIFEST_FIELD,  # filled when the templates are rendered: the JobSet this try submits
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        MANIFEST_FIELD: "yaml",
        "command": "py",
        "entrypoint_kwargs": "json",
        "env": "json",
        "labels": "json",
        "annotations": "json",
    }
    ui_color = "#e8f0fe"
    ships_source: ClassVar[bool] = False  # True for the decorators, which ship a function
    operator_extra_links = (
        JobSetWorkloadLink(),
        JobSetLogsLink(),
        KueueEventsLink(),
        TensorBoardLink(),
        ProfileLink(),
        DebugDumpLink(),
    )

    def __init__(
        self,
        *,
        accelerator: Accelerator,
        image: str | None = None,
        command: Sequence[str] | None = None,
        entrypoint: str | None = None,
        entrypoint_kwargs: Mapping[str, Any] | None = None,
        num_slices: int = 1,
        env: Mapping[str, str] | None = None,
        output_dir: str | None = None,
        checkpoint_asset: Asset | None = None,
        initialize_distributed: bool | None = None,
        pathways: bool | Pathways = False,
        pip_packages: Sequence[str] = (),
        python: str = "python3",
        name: str | None = None,
        namespace: str = "default",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        container_resources: Mapping[str, Mapping[str, str]] | None = None,
        service_account_name: str | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        volumes: Sequence[Mapping[str, Any]] = (),
        volume_mounts: Sequence[Mapping[str, Any]] = (),
        storage: Sequence[Storage] = (),
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        restart_on_exit_codes: Sequence[int] = (),
        restart_strategy: str = DEFAULT_RESTART_STRATEGY,
        local_checkpoint_size: str | None = None,
        termination_grace_period: int | None = None,
        retry_on_code_error: bool = True,
        progress_timeout: float | None = None,
        total_steps: int | str | None = None,
        profile_steps: tuple[int, int] | None = None,
        debug_dump: bool = False,
        checkpoint_warn_after: datetime.timedelta | float | None = DEFAULT_WARN_AFTER,
        ttl_seconds_after_finished: int | None = None,
        priority_class_name: str | None = None,
        queue_name: str | None = None,
        queue_timeout: datetime.timedelta | float | None = None,
        queue_timeout_until: str = "running",
        capacity: str | Sequence[str] = "on-demand",
        capacity_wait: datetime.timedelta | float | None = None,
        compute_class: str | None = None,
        reservation_project: str | None = None,
        placement: str | None = None,
        pod_template_override: Mapping[str, Any] | None = None,
        image_pull_policy: str | None = None,
        coordinator_port: int | None = None,
        host_network: bool | None = None,
        gpu_networking: str = "auto",
        gpu_networks: Sequence[str] = (),
        secrets: Sequence[Any] = (),
        security_context: Mapping[str, Any] | None = None,
        backend: str | None = None,
        kubernetes_conn_id: str | None = "kubernetes_default",
        deferrable: bool | None = None,
        on_finish_action: str = "delete_jobset",
        poll_interval: float = 10.0,
        stream_logs: str = STREAM_LEADER,
        project_id: str | None = None,
        location: str | None = None,
        cluster_name: str | None = None,
        gcp_conn_id: str = "google_cloud_default",
        impersonation_chain: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        # Jinja where Airflow renders nothing would be used as written.
        refuse_untemplated(locals(), [f for f in self.template_fields if f != MANIFEST_FIELD])
        if checkpoint_asset is not None:
            kwargs["outlets"] = with_checkpoint_outlet(
                kwargs.get("task_id", ""), checkpoint_asset, output_dir, kwargs.get("outlets")
            )
        super().__init__(**kwargs)
        if not self.ships_source and (command is None) == (entrypoint is None):
            raise ValueError(f"{self.task_id}: give exactly one of command or entrypoint.")
        if command is not None and pip_packages:
            raise ValueError(f"{self.task_id}: pip_packages needs entrypoint, not command.")
        if backend is not None:
            one_of("backend", backend, BACKENDS)
        one_of("on_finish_action", on_finish_action, ON_FINISH_ACTIONS)
        self.jobset_manifest: str | None = None  # see RenderedManifest
        self.accelerator = accelerator
        self.image = image
        self.command = command
        self.entrypoint = entrypoint
        self.entrypoint_kwargs = as_mapping("entrypoint_kwargs", entrypoint_kwargs, templated=True)
        self.num_slices = num_slices
        self.env = as_mapping("env", env, templated=True)
        self.output_dir = output_dir
        self.checkpoint_asset = checkpoint_asset
        self.set_controller(
            pathways, as_bool("initialize_distributed", initialize_distributed, optional=True)
        )
        self.set_pip_packages(pip_packages)
        self.python = python
        self.name = name
        self.namespace = namespace
        self.labels = as_mapping("labels", labels, templated=True)
        self.annotations = as_mapping("annotations", annotations, templated=True)
        self.container_resources = as_mapping("container_resources", container_resources)
        self.service_account_name = service_account_name
        self.node_selector = as_mapping("node_selector", node_selector)
        self.tolerations = as_list("tolerations", tolerations, Mapping)
        self.volumes = as_list("volumes", volumes, Mapping)
        self.volume_mounts = as_list("volume_mounts", volume_mounts, Mapping)
        self.storage = tuple(as_list("storage", storage, Storage))
        self.max_restarts = max_restarts
        self.restart_on_exit_codes = tuple(
            as_list("restart_on_exit_codes", restart_on_exit_codes, int)
        )
        self.restart_strategy = restart_strategy
        self.local_checkpoint_size = local_checkpoint_size
        self.termination_grace_period = termination_grace_period
        self.retry_on_code_error = as_bool("retry_on_code_error", retry_on_code_error)
        if progress_timeout is not None:
            positive_seconds("progress_timeout", progress_timeout)
        self.progress_timeout = progress_timeout
        self.total_steps = total_steps
        self.ttl_seconds_after_finished = ttl_seconds_after_finished
        self.priority_class_name = priority_class_name
        self.queue_name = queue_name
        self.queue_timeout = queue_timeout_seconds(queue_timeout, queue_timeout_until, queue_name)
        self.queue_timeout_until = queue_timeout_until
        self.capacity = CapacityChoices.parse(
            capacity,
            reservation_project=reservation_project,
            capacity_wait=capacity_wait,
            compute_class=compute_class,
            queue_name=queue_name,
        )
        timeout = self.execution_timeout
        self.capacity.check_waits(
            self.queue_timeout, timeout.total_seconds() if timeout is not None else None
        )
        self.capacity_choice = 0  # the choice the next manifest asks for (JobExecution)
        self.placement = placement
        self.pod_template_override = as_mapping(
            "pod_template_override", pod_template_override, optional=True
        )
        self.image_pull_policy = image_pull_policy
        self.coordinator_port = coordinator_port
        self.host_network = host_network
        self.gpu_networking = gpu_networking
        self.gpu_networks = tuple(as_list("gpu_networks", gpu_networks, str))
        self.secrets = as_secret_refs(secrets)
        self.security_context = as_mapping(
            "security_context",
            SAFE_SECURITY_CONTEXT if security_context is None else security_context,
        )
        self.backend = backend
        self.set_diagnostics(profile_steps, debug_dump)  # needs output_dir and the backend
        settings.check()  # a bad [jax] setting fails at parse, not at the end of a run
        self.kubernetes_conn_id = kubernetes_conn_id
        if deferrable is None:  # read at construction, so config changes need no re-import
            deferrable = conf.getboolean("operators", "default_deferrable", fallback=False)
        self.deferrable = as_bool("deferrable", deferrable)
        self.on_finish_action = on_finish_action
        self.watch = WatchOptions.of_task(  # carried whole to the backend and the trigger
            self.task_id,
            poll_interval=poll_interval,
            queue_timeout=self.queue_timeout,
            queue_until=queue_timeout_until,
            stream_logs=stream_logs,
            checkpoint_warn_after=(
                None
                if checkpoint_warn_after is None
                else positive_seconds(
                    "checkpoint_warn_after", checkpoint_warn_after, timedelta_ok=True
                )
            ),
            hosts=accelerator.hosts * num_slices,
            checkpoints_expected=checkpoint_asset is not None or local_checkpoint_size is not None,
        )
        self.project_id = project_id
        self.location = location
        self.cluster_name = cluster_name
        self.gcp_conn_id = gcp_conn_id
        self.impersonation_chain = impersonation_chain
        # Fail at parse, not at run: a spec with the literal values must already be valid.
        self._check_static_spec()

    @property
    def resolved_backend(self) -> str:
        return resolve_backend(self.backend)

    @property
    def backend_traits(self) -> BackendTraits:
        return BACKEND_TRAITS[self.resolved_backend]
