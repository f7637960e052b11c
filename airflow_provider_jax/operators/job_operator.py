"""The operator both JAX operators share: render a JobSet, run it on a backend, return the
leader's result. One class: its arguments are declared in ``job_arguments``, and what it builds
comes from plain builders beneath it (``job_spec``, ``job_settings``, ``publish``,
``run_diagnostics``, ``lineage``), each given the values it needs.

A capacity list is walked one JobSet at a time: a choice that gets no capacity within
``capacity_wait`` ends its wait with :class:`~airflow_provider_jax.exceptions.NoCapacity`, its
JobSet already deleted, and the next choice is submitted under the same name (``submit`` waits
for the old one to be gone), so a try never has two JobSets. A reattaching try goes on from the
choice its JobSet's annotation names.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator, conf
from airflow.sdk.definitions.retry_policy import RetryPolicy
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import is_template, positive_seconds
from airflow_provider_jax.contract.backend import BACKEND_TRAITS, get_backend, resolve_backend
from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.exceptions import NoCapacity, SlicesChanged
from airflow_provider_jax.links.diagnostics import DebugDumpLink, ProfileLink
from airflow_provider_jax.links.jobset import JobSetLogsLink, JobSetWorkloadLink, KueueEventsLink
from airflow_provider_jax.links.tensorboard import TensorBoardLink
from airflow_provider_jax.manifest import dynamic_slicing
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.capacity import queue_timeout_seconds
from airflow_provider_jax.manifest.capacity_choices import CapacityChoices
from airflow_provider_jax.manifest.failure_policy import DEFAULT_MAX_RESTARTS
from airflow_provider_jax.manifest.in_place_restart import DEFAULT_RESTART_STRATEGY
from airflow_provider_jax.manifest.names import jobset_name
from airflow_provider_jax.manifest.pathways import Pathways
from airflow_provider_jax.manifest.pod_command import split_pip_packages
from airflow_provider_jax.manifest.provider_keys import (
    TASK_INSTANCE_ANNOTATION,
    task_instance_annotation,
)
from airflow_provider_jax.manifest.spec import SAFE_SECURITY_CONTEXT
from airflow_provider_jax.operators import job_spec, task_state
from airflow_provider_jax.operators.checkpoint_asset import with_checkpoint_outlet
from airflow_provider_jax.operators.job_arguments import BY_NAME, TEMPLATED, checked, param_docs
from airflow_provider_jax.operators.job_spec import JobRequest, airflow_labels
from airflow_provider_jax.operators.rendered_manifest import MANIFEST_FIELD, shown_manifest
from airflow_provider_jax.operators.retry_policy import JaxRetryPolicy
from airflow_provider_jax.operators.run_diagnostics import Diagnostics
from airflow_provider_jax.reporting.checkpoint_freshness import DEFAULT_WARN_AFTER
from airflow_provider_jax.reporting.host_logs import STREAM_LEADER, STREAM_NONE

if TYPE_CHECKING:
    import datetime

    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Asset, Context, DeadlineAlert

    from airflow_provider_jax.contract import Backend, BackendTraits, Outcome, Started
    from airflow_provider_jax.manifest.accelerators import Accelerator
    from airflow_provider_jax.manifest.named_storage import Storage
    from airflow_provider_jax.manifest.spec import JaxJobSpec
    from airflow_provider_jax.operators.publish import OutcomePublisher

# What runs only in a task (publishing, staging, lineage, the backend's settings) is imported
# there: a DAG file's parse pays for what construction needs, no more.
_XCOM_KEYS = ("JOBSET_NAME_XCOM_KEY", "JOBSET_NAMESPACE_XCOM_KEY", "LAST_REPORT_XCOM_KEY",
              "RESUMED_FROM_XCOM_KEY")  # fmt: skip


def __getattr__(name: str) -> Any:
    """The XCom keys, re-exported from ``publish`` as before, imported when asked for."""
    if name in _XCOM_KEYS:
        from airflow_provider_jax.operators import publish

        return getattr(publish, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TRIGGER_FAIL_REPR = "__fail__"  # Airflow's next_method for a deferred task it fails itself


class JaxJobOperator(BaseOperator):
    """Run a multi-host JAX program as a JobSet and return process 0's result.

    Give either ``command`` (any argv; the JAX coordination env is set for it) or
    ``entrypoint`` (``"package.module:function"``, called with ``entrypoint_kwargs`` after
    ``jax.distributed.initialize()``; its JSON return value on process 0 becomes the XCom).
    Use :class:`JaxTpuSliceOperator` or :class:`JaxGpuJobOperator`, which parse ``accelerator``.

    The arguments are declared once, in
    :mod:`~airflow_provider_jax.operators.job_arguments`, which writes the lines below.
    """

    template_fields: Sequence[str] = (
        *TEMPLATED,
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
        argv: Sequence[str] | None = None,
        num_slices: int = 1,
        min_slices: int | None = None,
        shrink_after: datetime.timedelta | float | None = None,
        env: Mapping[str, str] | None = None,
        output_dir: str | None = None,
        checkpoint_asset: Asset | None = None,
        initialize_distributed: bool | None = None,
        require_distributed: bool = False,
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
        retry_on_code_error: bool | None = None,
        progress_timeout: float | None = None,
        total_steps: int | str | None = None,
        deadline: DeadlineAlert | Sequence[DeadlineAlert] | None = None,
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
        if checkpoint_asset is not None:
            kwargs["outlets"] = with_checkpoint_outlet(
                kwargs.get("task_id", ""), checkpoint_asset, output_dir, kwargs.get("outlets")
            )
        kwargs["retry_policy"] = _retry_policy(retry_on_code_error, kwargs.get("retry_policy"))
        super().__init__(**kwargs)
        for airflows in ("execution_timeout", "retry_delay", "max_retry_delay"):
            # Airflow adds these to a date; past the range a datetime holds, its scheduling
            # fails after the task ran (the provider's own durations are held the same).
            if (duration := getattr(self, airflows, None)) is not None:
                positive_seconds(airflows, duration, timedelta_ok=True, zero_ok=True)
        # Each argument through its declared kind; Jinja where nothing renders it is refused.
        values = checked(locals())
        if not self.ships_source and (command is None) == (entrypoint is None):
            raise ValueError(f"{self.task_id}: give exactly one of command or entrypoint.")
        if command is not None and pip_packages:
            raise ValueError(f"{self.task_id}: pip_packages needs entrypoint, not command.")
        if command is not None and argv is not None:
            raise ValueError(
                f"{self.task_id}: argv is sys.argv for an entrypoint or a decorated function; "
                "a command= is its own argv."
            )
        if command is None and require_distributed:
            raise ValueError(
                f"{self.task_id}: require_distributed checks a command= program; with an "
                "entrypoint or a decorated function the runtime joins jax.distributed itself."
            )
        if require_distributed and pathways:
            raise ValueError(
                f"{self.task_id}: require_distributed does not go with pathways=: under "
                "Pathways one process drives every chip and joins no jax.distributed."
            )
        if command is not None and initialize_distributed:
            raise ValueError(
                f"{self.task_id}: initialize_distributed=True does nothing for a command=, "
                "which joins jax.distributed itself (a bare jax.distributed.initialize() "
                "works); leave it unset, or use require_distributed=True to check it joined."
            )
        # Rules between arguments, checked where their values meet.
        if values["deadline"] and stream_logs == STREAM_NONE:
            raise ValueError(
                f"{self.task_id}: deadline= is held against the ETA of the leader's reports, "
                "which stream_logs='none' does not read; use stream_logs='leader' or 'all'."
            )
        if values["deadline"] and command is not None:
            raise ValueError(
                f"{self.task_id}: deadline= is held against the ETA of the leader's "
                "runtime.report() calls, which a command= program can't make (it gets the JAX "
                "environment, not the runtime): use an entrypoint, or the DAG's deadline=."
            )
        values["pathways"], values["initialize_distributed"] = _controller(
            pathways, values["initialize_distributed"]
        )
        values["pip_packages"] = self._pip_packages(values["pip_packages"])
        values["entrypoint_kwargs"] = values["entrypoint_kwargs"] or {}
        values["security_context"] = (
            SAFE_SECURITY_CONTEXT if security_context is None else values["security_context"]
        )
        values["restart_on_exit_codes"] = tuple(values["restart_on_exit_codes"])
        values["storage"] = tuple(values["storage"])
        values["gpu_networks"] = tuple(values["gpu_networks"])
        for name in ("container_resources", "node_selector", "env", "labels", "annotations"):
            if values[name] is None:
                values[name] = {}
        values["queue_timeout"] = queue_timeout_seconds(
            queue_timeout, queue_timeout_until, queue_name
        )
        values["capacity"] = CapacityChoices.parse(
            capacity,
            reservation_project=reservation_project,
            capacity_wait=capacity_wait,
            compute_class=compute_class,
            queue_name=queue_name,
        )
        values["elastic"] = ElasticSlices.of(
            num_slices,
            values["min_slices"],
            values["shrink_after"],
            output_dir=output_dir,
            pathways=values["pathways"],
            max_restarts=values["max_restarts"],
            execution_timeout=self.execution_timeout,
            multi_pool_slices=accelerator.dynamic_slicing
            and dynamic_slicing.cubes(accelerator) > 1,
        )
        timeout = self.execution_timeout
        values["capacity"].check_waits(
            values["queue_timeout"], timeout.total_seconds() if timeout is not None else None
        )
        if values["deferrable"] is None:  # read at construction: config changes need no re-import
            values["deferrable"] = conf.getboolean(
                "operators", "default_deferrable", fallback=False
            )
        for name, value in values.items():
            setattr(self, name, value)
        self.diagnostics = Diagnostics(values["profile_steps"], values["debug_dump"])
        self.diagnostics.check_place(self.task_id, output_dir, self.backend_traits.remote)
        settings.check()  # a bad [jax] setting fails at parse, not at the end of a run
        self.watch = WatchOptions.of_task(  # carried whole to the backend and the trigger
            self.task_id,
            poll_interval=poll_interval,
            queue_timeout=self.queue_timeout,
            queue_until=queue_timeout_until,
            stream_logs=stream_logs,
            checkpoint_warn_after=values["checkpoint_warn_after"],
            hosts=accelerator.hosts * num_slices,
            checkpoints_expected=checkpoint_asset is not None or local_checkpoint_size is not None,
        )
        self.jobset_manifest: str | None = None  # filled when the templates are rendered
        self.capacity_choice = 0  # the choice the next manifest asks for
        self.slices_now = num_slices  # the size it asks for (fewer: an elastic job shrunk)
        self.resized: str | None = None  # why it asks for that size (contract/elastic.py)
        # An elastic job's goodput so far, across its sizes: the local backend's clock, or the
        # ledger of the earlier JobSets, which the next one's trigger goes on from.
        self.goodput_clock: Any = None
        self.goodput_before: dict[str, Any] | None = None
        self.stored_links: dict[str, str] | None = None  # see StoredLink.get_link
        self._running: Backend | None = None  # the backend execute() waits on, for on_kill
        self._recorded: task_state.Recorded | None = None  # an earlier try's JobSet, if any
        # Fail at parse, not at run: a spec with the literal values must already be valid.
        # The JobSet too: what the provider owns is checked on it, after every merge.
        build_jobset(
            self.build_spec(name=self.name if _literal(self.name) else "x", rendered=False)
        )

    def _pip_packages(self, pip_packages: list[str]) -> list[str]:
        """What to ``pip install`` at process start; JAX itself is the image's, never these."""
        kept, dropped = split_pip_packages(pip_packages)
        if dropped:
            self.log.warning(
                "%s: not installing %s at process start; the image's accelerator-matched JAX "
                "is used instead.",
                self.task_id,
                dropped,
            )
        return kept

    @property
    def resolved_backend(self) -> str:
        return resolve_backend(self.backend)

    @property
    def backend_traits(self) -> BackendTraits:
        return BACKEND_TRAITS[self.resolved_backend]

    # -- what the task builds: the job spec, the JobSet, the backend's settings -------------

    def request(self, *, rendered: bool = True, try_number: int = 0) -> JobRequest:
        """This operator's argument values, as one build reads them."""
        values = {name: getattr(self, name) for name in BY_NAME}  # as __init__ made them
        return JobRequest(
            values=values | {"diagnostics": self.diagnostics},
            traits=self.backend_traits,
            rendered=rendered,
            execution_timeout=self.execution_timeout,
            capacity_choice=self.capacity_choice,
            slices=self.slices_now if self.slices_now != self.num_slices else None,
            resized=self.resized,
            try_number=try_number,
            connection_extras=lambda: job_spec.connection_extras(
                self.cluster_name, self.kubernetes_conn_id
            ),
        )

    def build_spec(
        self,
        *,
        name: str,
        labels: Mapping[str, str] | None = None,
        rendered: bool = True,
        try_number: int = 0,
    ) -> JaxJobSpec:
        """The job spec from this operator's (rendered) arguments."""
        request = self.request(rendered=rendered, try_number=try_number)
        return job_spec.build_spec(
            request,
            name=name,
            labels=labels,
            program=self._program(request, name),
            call_arguments=self._call_arguments(rendered),
        )

    def _program(self, request: JobRequest, jobset: str) -> tuple[Any, dict[str, str]]:
        """Command and env of the program every process runs. Before rendering, Jinja strings
        are still strings, which JSON-encodes fine, so every value already real is checked."""
        if self.command is not None:
            return job_spec.command_program(request)
        kwargs = request.mapping("entrypoint_kwargs")
        return job_spec.runtime_call(request, jobset, entrypoint=self.entrypoint, kwargs=kwargs)

    def _call_arguments(self, rendered: bool) -> Mapping[str, Any]:
        """The arguments shipped to every process, as they will travel."""
        return self.entrypoint_kwargs if self.entrypoint else {}

    def data_inputs(self, rendered: bool) -> list[Any]:
        """The ``Data(...)`` values among the program's arguments."""
        return job_spec.data_inputs(self._call_arguments(rendered))

    def jobset_name_for(self, context: Context) -> str:
        if self.name:
            return self.name
        ti = context["ti"]
        map_index = ti.map_index if ti.map_index is not None else -1
        return self._default_name(ti.dag_id, ti.run_id, map_index)

    def _default_name(self, dag_id: str, run_id: str, map_index: int) -> str:
        pathways = self.pathways is not None
        dynamic = self.accelerator.dynamic_slicing and not is_template(self.namespace)
        return jobset_name(
            *(dag_id, self.task_id, run_id, map_index, self.accelerator, self.num_slices),
            pathways,
            max_length=dynamic_slicing.max_name_length(self.namespace) if dynamic else None,
        )

    def build_manifest(self, context: Context) -> dict[str, Any]:
        """Render the JobSet for this task instance (after templates are rendered)."""
        ti = context["ti"]
        labels = airflow_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
        name = self.jobset_name_for(context)
        manifest = build_jobset(self.build_spec(name=name, labels=labels, try_number=ti.try_number))
        identity = task_instance_annotation(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)
        meta = manifest["metadata"]
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            TASK_INSTANCE_ANNOTATION: identity,
        }
        return manifest

    def dry_run(self) -> dict[str, Any]:
        """The manifest this task would submit, without touching a cluster."""
        dag_id = self.dag_id if self.has_dag() else "dry_run"
        name = self.name or self._default_name(dag_id, "dry_run", -1)
        labels = airflow_labels(dag_id, self.task_id, "dry_run", -1, 0)
        manifest = build_jobset(self.build_spec(name=name, labels=labels, rendered=False))
        self.log.info(
            "Dry run: JobSet %s, %d slice(s) x %d host(s) of %s",
            name,
            self.num_slices,
            self.accelerator.hosts,
            self.accelerator.name,
        )
        return manifest

    def _do_render_template_fields(
        self, parent: Any, template_fields: Any, context: Context, *args: Any, **kwargs: Any
    ) -> None:
        # Airflow renders a mapped task through its unmapped copy's _do_render_template_fields,
        # not render_template_fields, so this hook serves mapped and plain tasks alike; it is
        # also called for nested templated objects, whose ``parent`` is not the operator.
        if parent is self:
            self.jobset_manifest = None  # a field like the others, but never a template
        super()._do_render_template_fields(parent, template_fields, context, *args, **kwargs)
        if parent is self and "ti" in context:  # the JobSet this try submits, as YAML
            self.jobset_manifest = shown_manifest(lambda: self.build_manifest(context))

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage:
        from airflow_provider_jax.operators.lineage import lineage

        return lineage(self.output_dir, self._call_arguments(True))

    # -- how a try runs: start, wait in the worker or defer, publish --------------------------

    def _publisher(self) -> OutcomePublisher:
        from airflow_provider_jax.operators.publish import OutcomePublisher

        return OutcomePublisher(
            task_id=self.task_id,
            log=self.log,
            accelerator_name=self.accelerator.name,
            hosts=self.watch.hosts,
            output_dir=self.output_dir,
            checkpoint_asset=self.checkpoint_asset,
            gcp_conn_id=self.gcp_conn_id,
            impersonation_chain=self.impersonation_chain,
            link_keys=[link.xcom_key for link in self.operator_extra_links],
            stored_links=self.stored_links,
        )

    def _backend(self, context: Context) -> Backend:
        from airflow_provider_jax.operators.job_settings import job_settings

        return get_backend(self.resolved_backend, job_settings(self, context))  # type: ignore[arg-type]

    def execute(self, context: Context) -> Any:
        self.stored_links = {}  # none yet: see StoredLink.get_link
        if self.backend_traits.remote:  # a local Data folder is staged before any pod
            from airflow_provider_jax.operators.data_staging import upload

            upload(self.data_inputs(True), self.gcp_conn_id, self.impersonation_chain, self.log)
        self._recorded = task_state.recorded(context, self.log)
        self.slices_now, self.resized = self.num_slices, None
        self.goodput_clock = self.goodput_before = None
        return self._run_choice(context, 0)

    def _run_choice(self, context: Context, choice: int) -> Any:
        """Submit capacity choice ``choice`` (or reattach), then wait or defer."""
        self.capacity_choice = choice
        try:
            manifest = self.build_manifest(context)
        except (ValueError, TypeError) as err:
            # Rendered values that are wrong stay wrong: fail without burning retries.
            raise AirflowFailException(f"{self.task_id}: {err}") from err
        # Kept until the wait returns: Airflow calls on_kill *after* a timeout or a kill has
        # raised out of execute(), and on_kill must still reach the job.
        backend = self._running = self._backend(context)
        started = backend.start(manifest)
        publisher = self._publisher()
        try:
            task_state.record(context, started, getattr(self, "_recorded", None), self.log)
            self._recorded = None  # a further capacity choice of this try is not a reconnect
            choice = self.capacity_choice = started.capacity_choice  # a reattach: further on
            links = self.diagnostics.links(self.output_dir, started.name, context["ti"].try_number)
            publisher.announce(context, started, links)
            if self.deferrable and started.deferral is not None:
                deferral = started.deferral
                self.defer(
                    trigger=deferral.trigger,
                    method_name="execute_complete",
                    kwargs={**deferral.kwargs, **({"capacity_choice": choice} if choice else {})},
                    timeout=deferral.timeout,
                )
        except TaskDeferred:
            raise
        except BaseException as err:
            # Nothing will wait on the job: it must not run on, unwatched and paid for.
            self._abandon(backend, started, err)
            raise
        try:
            with publisher.failures(context):
                outcome = backend.wait(started)
        except NoCapacity as err:
            return self._next_choice(context, choice, err)
        except SlicesChanged as move:
            return self._resize(context, choice, move)
        self._running = None
        return publisher.publish(context, outcome)

    def _resize(self, context: Context, choice: int, move: SlicesChanged) -> Any:
        """Submit the JobSet again at the size the backend chose (the old one is deleted;
        ``submit`` waits until it is gone)."""
        self.log.warning("%s", move.line)
        self.slices_now, self.resized = move.slices, move.reason
        if isinstance(move.clock, dict):  # a trigger's ledger, of every size so far
            self.goodput_before = move.clock
        else:  # the local backend's clock, which the next run goes on with
            self.goodput_clock = move.clock
        return self._run_choice(context, choice)

    def _abandon(self, backend: Backend, started: Started, err: BaseException) -> None:
        """Delete the job this try started, when the try fails before it waits on it."""
        where = f"JobSet {started.namespace}/{started.name}"
        self.log.error(
            "%s was started, but this try failed before waiting on it (%s: %s): deleting it.",
            where,
            type(err).__name__,
            err,
        )
        try:
            backend.kill()
        except Exception:
            self.log.exception("Could not delete %s; delete it by hand.", where)
        else:
            self.log.error("Deleted %s.", where)
        self._running = None

    def execute_complete(
        self,
        context: Context,
        event: dict[str, Any],
        cluster: dict[str, Any] | None = None,
        capacity_choice: int = 0,
    ) -> Any:
        """Resume after the JobSet trigger fired: the leader's result, the failure, the next
        capacity choice, or an elastic job's next size (the event says it; the trigger's
        ledger already holds the earlier sizes')."""
        self.capacity_choice = capacity_choice
        publisher = self._publisher()
        try:
            with publisher.failures(context):
                outcome: Outcome = self._backend(context).complete(event, cluster)
        except NoCapacity as err:
            return self._next_choice(context, capacity_choice, err)
        except SlicesChanged as move:
            return self._resize(context, capacity_choice, move)
        return publisher.publish(context, outcome)

    def _next_choice(self, context: Context, choice: int, err: NoCapacity) -> Any:
        choices = self.capacity.choices
        if choice + 1 >= len(choices):  # the last choice waits as a plain capacity: not here
            raise err
        self.log.warning(
            "Capacity %s (choice %d of %d): %s. Its JobSet is deleted; trying %s next.",
            choices[choice],
            choice + 1,
            len(choices),
            err.summary.rstrip("."),
            choices[choice + 1],
        )
        return self._run_choice(context, choice + 1)

    def resume_execution(
        self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context
    ) -> Any:
        if next_method == TRIGGER_FAIL_REPR:
            # Airflow failed the deferred task itself (its trigger timeout, or the trigger
            # crashed): the JobSet must not outlive it.
            self._backend(context).kill()
        return super().resume_execution(next_method, next_kwargs, context)

    def on_kill(self) -> None:
        # Set while execute() runs (waiting in the worker); a deferred task has no worker.
        if (backend := getattr(self, "_running", None)) is not None:
            backend.kill()


JaxJobOperator.__doc__ = f"{JaxJobOperator.__doc__}\n{param_docs()}\n"


def _retry_policy(retry_on_code_error: object, given: object) -> object:
    """The task's retry policy: the user's own, else the provider's. ``retry_on_code_error``,
    which it replaces, still chooses how the provider's treats code errors."""
    if retry_on_code_error is not None:
        warnings.warn(
            "retry_on_code_error is deprecated: the provider's retry policy decides by the "
            "error (retry_policy=JaxRetryPolicy(code_errors='fail') is retry_on_code_error="
            "False).",
            DeprecationWarning,
            stacklevel=4,
        )
        if given is not None:
            raise ValueError(
                "retry_on_code_error does not go with retry_policy=: give "
                "JaxRetryPolicy(code_errors=..., fallback=<your policy>) instead."
            )
    if given is not None:
        if not isinstance(given, RetryPolicy):
            raise TypeError(
                f"retry_policy must be a RetryPolicy (JaxRetryPolicy(...), or Airflow's "
                f"ExceptionRetryPolicy), got {type(given).__name__} {given!r}."
            )
        return given
    if retry_on_code_error is None:
        return JaxRetryPolicy()
    return JaxRetryPolicy(code_errors="classify" if retry_on_code_error else "fail")


def _literal(value: object) -> bool:
    return value is not None and not is_template(value)


def _controller(pathways: object, initialize_distributed: bool | None) -> tuple[Any, bool]:
    """``pathways=`` and ``initialize_distributed``: under Pathways one process drives every
    chip, so there is no ``jax.distributed`` to join."""
    chosen = Pathways.of(pathways)
    if chosen is not None and initialize_distributed:
        raise ValueError(
            "initialize_distributed=True does not go with pathways=: under Pathways one "
            "process drives every chip and joins no jax.distributed. Leave it unset."
        )
    return chosen, chosen is None if initialize_distributed is None else initialize_distributed
