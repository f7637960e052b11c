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

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator, conf
from airflow.sdk.definitions.retry_policy import RetryPolicy
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import is_template, positive_seconds
from airflow_provider_jax.contract.backend import BACKEND_TRAITS, get_backend, resolve_backend
from airflow_provider_jax.exceptions import NoCapacity, SlicesChanged
from airflow_provider_jax.links.diagnostics import DebugDumpLink, ProfileLink
from airflow_provider_jax.links.jobset import JobSetLogsLink, JobSetWorkloadLink, KueueEventsLink
from airflow_provider_jax.links.tensorboard import TensorBoardLink
from airflow_provider_jax.manifest import dynamic_slicing
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.names import jobset_name
from airflow_provider_jax.manifest.pathways import Pathways
from airflow_provider_jax.manifest.provider_keys import (
    TASK_INSTANCE_ANNOTATION,
    task_instance_annotation,
)
from airflow_provider_jax.operators import job_spec, task_state
from airflow_provider_jax.operators.checkpoint_asset import with_checkpoint_outlet
from airflow_provider_jax.operators.job_arguments import TEMPLATED, JobArguments
from airflow_provider_jax.operators.job_plan import JobPlan, plan_job
from airflow_provider_jax.operators.job_spec import JobRequest, airflow_labels
from airflow_provider_jax.operators.rendered_manifest import MANIFEST_FIELD, shown_manifest
from airflow_provider_jax.operators.retry_policy import JaxRetryPolicy

if TYPE_CHECKING:
    import datetime

    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk import Asset, Context
    from airflow.sdk.definitions.deadline import DeadlineAlert

    from airflow_provider_jax.contract import Backend, BackendTraits, Outcome, Started
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
    platform: ClassVar[str]  # tpu or gpu: which accelerators and arguments (the subclasses)
    arguments: JobArguments  # as the user gave them, checked (the signature below)
    plan: JobPlan  # what they come to together
    ships_source: ClassVar[bool] = False  # True for the decorators, which ship a function
    operator_extra_links = (
        JobSetWorkloadLink(),
        JobSetLogsLink(),
        KueueEventsLink(),
        TensorBoardLink(),
        ProfileLink(),
        DebugDumpLink(),
    )

    # --- begin: written by argument_signature.py from JobArguments; do not edit ---
    def __init__(
        self,
        *,
        accelerator: str,
        num_slices: int = 1,
        chips_per_host: int | None = None,
        dynamic_slicing: bool = False,
        gpus_per_node: int | None = None,
        num_nodes: int | None = None,
        image: str | None = None,
        command: Sequence[str] | None = None,
        entrypoint: str | None = None,
        entrypoint_kwargs: Mapping[str, Any] | None = None,
        argv: Sequence[str] | None = None,
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
        max_restarts: int = 3,
        restart_on_exit_codes: Sequence[int] = (),
        restart_strategy: str = "recreate",
        local_checkpoint_size: str | None = None,
        termination_grace_period: int | None = None,
        retry_on_code_error: bool | None = None,
        progress_timeout: float | None = None,
        total_steps: int | str | None = None,
        deadline: DeadlineAlert | Sequence[DeadlineAlert] | None = None,
        profile_steps: tuple[int, int] | None = None,
        debug_dump: bool = False,
        jax_config: Mapping[str, Any] | None = None,
        checkpoint_warn_after: datetime.timedelta | float | None = 600.0,
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
        stream_logs: str = "leader",
        project_id: str | None = None,
        location: str | None = None,
        cluster_name: str | None = None,
        gcp_conn_id: str = "google_cloud_default",
        impersonation_chain: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start(
            JobArguments(
                accelerator=accelerator,
                num_slices=num_slices,
                chips_per_host=chips_per_host,
                dynamic_slicing=dynamic_slicing,
                gpus_per_node=gpus_per_node,
                num_nodes=num_nodes,
                image=image,
                command=command,
                entrypoint=entrypoint,
                entrypoint_kwargs=entrypoint_kwargs,
                argv=argv,
                min_slices=min_slices,
                shrink_after=shrink_after,
                env=env,
                output_dir=output_dir,
                checkpoint_asset=checkpoint_asset,
                initialize_distributed=initialize_distributed,
                require_distributed=require_distributed,
                pathways=pathways,
                pip_packages=pip_packages,
                python=python,
                name=name,
                namespace=namespace,
                labels=labels,
                annotations=annotations,
                container_resources=container_resources,
                service_account_name=service_account_name,
                node_selector=node_selector,
                tolerations=tolerations,
                volumes=volumes,
                volume_mounts=volume_mounts,
                storage=storage,
                max_restarts=max_restarts,
                restart_on_exit_codes=restart_on_exit_codes,
                restart_strategy=restart_strategy,
                local_checkpoint_size=local_checkpoint_size,
                termination_grace_period=termination_grace_period,
                retry_on_code_error=retry_on_code_error,
                progress_timeout=progress_timeout,
                total_steps=total_steps,
                deadline=deadline,
                profile_steps=profile_steps,
                debug_dump=debug_dump,
                jax_config=jax_config,
                checkpoint_warn_after=checkpoint_warn_after,
                ttl_seconds_after_finished=ttl_seconds_after_finished,
                priority_class_name=priority_class_name,
                queue_name=queue_name,
                queue_timeout=queue_timeout,
                queue_timeout_until=queue_timeout_until,
                capacity=capacity,
                capacity_wait=capacity_wait,
                compute_class=compute_class,
                reservation_project=reservation_project,
                placement=placement,
                pod_template_override=pod_template_override,
                image_pull_policy=image_pull_policy,
                coordinator_port=coordinator_port,
                host_network=host_network,
                gpu_networking=gpu_networking,
                gpu_networks=gpu_networks,
                secrets=secrets,
                security_context=security_context,
                backend=backend,
                kubernetes_conn_id=kubernetes_conn_id,
                deferrable=deferrable,
                on_finish_action=on_finish_action,
                poll_interval=poll_interval,
                stream_logs=stream_logs,
                project_id=project_id,
                location=location,
                cluster_name=cluster_name,
                gcp_conn_id=gcp_conn_id,
                impersonation_chain=impersonation_chain,
            ),
            kwargs,
        )

    @property
    def image(self) -> str | None:
        return self.arguments.image

    @image.setter
    def image(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, image=value)

    @property
    def command(self) -> Sequence[str] | None:
        return self.arguments.command

    @command.setter
    def command(self, value: Sequence[str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, command=value)

    @property
    def entrypoint(self) -> str | None:
        return self.arguments.entrypoint

    @entrypoint.setter
    def entrypoint(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, entrypoint=value)

    @property
    def entrypoint_kwargs(self) -> Mapping[str, Any] | None:
        return self.arguments.entrypoint_kwargs

    @entrypoint_kwargs.setter
    def entrypoint_kwargs(self, value: Mapping[str, Any] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, entrypoint_kwargs=value)

    @property
    def argv(self) -> Sequence[str] | None:
        return self.arguments.argv

    @argv.setter
    def argv(self, value: Sequence[str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, argv=value)

    @property
    def env(self) -> Mapping[str, str] | None:
        return self.arguments.env

    @env.setter
    def env(self, value: Mapping[str, str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, env=value)

    @property
    def output_dir(self) -> str | None:
        return self.arguments.output_dir

    @output_dir.setter
    def output_dir(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, output_dir=value)

    @property
    def name(self) -> str | None:
        return self.arguments.name

    @name.setter
    def name(self, value: str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, name=value)

    @property
    def namespace(self) -> str:
        return self.arguments.namespace

    @namespace.setter
    def namespace(self, value: str) -> None:
        self.arguments = dataclasses.replace(self.arguments, namespace=value)

    @property
    def labels(self) -> Mapping[str, str] | None:
        return self.arguments.labels

    @labels.setter
    def labels(self, value: Mapping[str, str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, labels=value)

    @property
    def annotations(self) -> Mapping[str, str] | None:
        return self.arguments.annotations

    @annotations.setter
    def annotations(self, value: Mapping[str, str] | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, annotations=value)

    @property
    def total_steps(self) -> int | str | None:
        return self.arguments.total_steps

    @total_steps.setter
    def total_steps(self, value: int | str | None) -> None:
        self.arguments = dataclasses.replace(self.arguments, total_steps=value)

    # --- end: written by argument_signature.py ---

    def _start(self, arguments: JobArguments, kwargs: dict[str, Any]) -> None:
        """The operator, from its arguments as given (the signature above) and Airflow's own
        (``kwargs``): each argument through its kind, then the rules between them, then the
        JobSet of the literal values, all at parse."""
        if arguments.checkpoint_asset is not None:
            kwargs["outlets"] = with_checkpoint_outlet(
                kwargs.get("task_id", ""),
                arguments.checkpoint_asset,
                arguments.output_dir,
                kwargs.get("outlets"),
            )
        kwargs["retry_policy"] = _retry_policy(
            arguments.retry_on_code_error, kwargs.get("retry_policy")
        )
        super().__init__(**kwargs)
        for name, duration in (
            ("execution_timeout", self.execution_timeout),
            ("retry_delay", self.retry_delay),
            ("max_retry_delay", self.max_retry_delay),
        ):
            # Airflow adds these to a date; past the range a datetime holds, its scheduling
            # fails after the task ran (the provider's own durations are held the same).
            if duration is not None:
                positive_seconds(name, duration, timedelta_ok=True, zero_ok=True)
        self.arguments = arguments.checked(rendered=False)
        self.plan = plan_job(
            self.arguments,
            platform=self.platform,
            task_id=self.task_id,
            ships_source=self.ships_source,
            execution_timeout=self.execution_timeout,
            remote=self.backend_traits.remote,
            default_deferrable=conf.getboolean("operators", "default_deferrable", fallback=False),
            log=self.log,
        )
        settings.check()  # a bad [jax] setting fails at parse, not at the end of a run
        self.jobset_manifest: str | None = None  # filled when the templates are rendered
        self.capacity_choice = 0  # the choice the next manifest asks for
        self.slices_now = self.arguments.num_slices  # fewer: an elastic job shrunk
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
        given = self.arguments.name
        literal = given if given is not None and _literal(given) else "x"
        build_jobset(self.build_spec(name=literal, rendered=False))

    @property
    def resolved_backend(self) -> str:
        return resolve_backend(self.arguments.backend)

    @property
    def backend_traits(self) -> BackendTraits:
        return BACKEND_TRAITS[self.resolved_backend]

    # -- what the task builds: the job spec, the JobSet, the backend's settings -------------

    def request(self, *, rendered: bool = True, try_number: int = 0) -> JobRequest:
        """This operator's arguments, as one build reads them: once rendered, each goes
        through its kind again (a template can render to anything) before anything is made."""
        a = self.arguments.checked(rendered=True) if rendered else self.arguments
        return JobRequest(
            arguments=a,
            plan=self.plan,
            traits=self.backend_traits,
            rendered=rendered,
            execution_timeout=self.execution_timeout,
            capacity_choice=self.capacity_choice,
            slices=self.slices_now if self.slices_now != a.num_slices else None,
            resized=self.resized,
            try_number=try_number,
            connection_extras=lambda: job_spec.connection_extras(
                a.cluster_name, a.kubernetes_conn_id
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
        a = request.arguments
        if a.command is not None:
            return job_spec.command_program(request)
        kwargs = job_spec.mapping(a.entrypoint_kwargs)
        return job_spec.runtime_call(request, jobset, entrypoint=a.entrypoint, kwargs=kwargs)

    def _call_arguments(self, rendered: bool) -> Mapping[str, Any]:
        """The arguments shipped to every process, as they will travel."""
        a = self.arguments
        return job_spec.mapping(a.entrypoint_kwargs) if a.entrypoint else {}

    def data_inputs(self, rendered: bool) -> list[Any]:
        """The ``Data(...)`` values among the program's arguments."""
        return job_spec.data_inputs(self._call_arguments(rendered))

    def jobset_name_for(self, context: Context) -> str:
        if self.arguments.name:
            return self.arguments.name
        ti = context["ti"]
        map_index = ti.map_index if ti.map_index is not None else -1
        return self._default_name(ti.dag_id, ti.run_id, map_index)

    def _default_name(self, dag_id: str, run_id: str, map_index: int) -> str:
        a, accelerator = self.arguments, self.plan.accelerator
        dynamic = accelerator.dynamic_slicing and not is_template(a.namespace)
        return jobset_name(
            *(dag_id, self.task_id, run_id, map_index, accelerator, a.num_slices),
            self.plan.pathways is not None,
            max_length=dynamic_slicing.max_name_length(a.namespace) if dynamic else None,
        )

    def build_manifest(self, context: Context) -> dict[str, Any]:
        """Render the JobSet for this task instance (after templates are rendered)."""
        ti = context["ti"]
        labels = airflow_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
        name = self.jobset_name_for(context)
        manifest = build_jobset(self.build_spec(name=name, labels=labels, try_number=ti.try_number))
        map_index = ti.map_index if ti.map_index is not None else -1
        identity = task_instance_annotation(ti.dag_id, ti.task_id, ti.run_id, map_index)
        meta = manifest["metadata"]
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            TASK_INSTANCE_ANNOTATION: identity,
        }
        return manifest

    # Airflow's dry_run() returns nothing; this one also returns the manifest it logs, which
    # a caller may read (docs/recovery.md): a wider return, nothing a caller of Airflow's loses.
    def dry_run(self) -> dict[str, Any]:  # type: ignore[override]
        """The manifest this task would submit, without touching a cluster."""
        dag_id = self.dag_id if self.has_dag() else "dry_run"
        name = self.arguments.name or self._default_name(dag_id, "dry_run", -1)
        labels = airflow_labels(dag_id, self.task_id, "dry_run", -1, 0)
        manifest = build_jobset(self.build_spec(name=name, labels=labels, rendered=False))
        self.log.info(
            "Dry run: JobSet %s, %d slice(s) x %d host(s) of %s",
            name,
            self.arguments.num_slices,
            self.plan.accelerator.hosts,
            self.plan.accelerator.name,
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

        return lineage(self.arguments.output_dir, self._call_arguments(True))

    # -- how a try runs: start, wait in the worker or defer, publish --------------------------

    def _publisher(self) -> OutcomePublisher:
        from airflow_provider_jax.operators.publish import OutcomePublisher

        a = self.arguments
        return OutcomePublisher(
            task_id=self.task_id,
            log=self.log,
            accelerator_name=self.plan.accelerator.name,
            hosts=self.plan.watch.hosts,
            output_dir=a.output_dir,
            checkpoint_asset=a.checkpoint_asset,
            gcp_conn_id=a.gcp_conn_id,
            impersonation_chain=a.impersonation_chain,
            link_keys=[link.xcom_key for link in self.operator_extra_links],
            stored_links=self.stored_links,
        )

    def _backend(self, context: Context) -> Backend:
        from airflow_provider_jax.operators.job_settings import TryState, job_settings

        state = TryState(
            name=self.jobset_name_for(context),
            slices=self.slices_now,
            goodput_clock=self.goodput_clock,
            goodput_before=self.goodput_before,
        )
        settings_ = job_settings(
            self.arguments,
            self.plan,
            state,
            context,
            execution_timeout=self.execution_timeout,
            dag=self.dag if self.has_dag() else None,
            log=self.log,
        )
        return get_backend(self.resolved_backend, settings_)

    def execute(self, context: Context) -> Any:
        self.stored_links = {}  # none yet: see StoredLink.get_link
        a = self.arguments
        if self.backend_traits.remote:  # a local Data folder is staged before any pod
            from airflow_provider_jax.operators.data_staging import upload

            upload(self.data_inputs(True), a.gcp_conn_id, a.impersonation_chain, self.log)
        self._recorded = task_state.recorded(context, self.log)
        self.slices_now, self.resized = a.num_slices, None
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
            links = self.plan.diagnostics.links(
                self.arguments.output_dir, started.name, context["ti"].try_number
            )
            publisher.announce(context, started, links)
            if self.plan.deferrable and started.deferral is not None:
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
        choices = self.plan.capacity.choices
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
