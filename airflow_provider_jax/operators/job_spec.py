"""How an operator's argument values become a job spec: at parse (checked with the literal
values), for a dry run, and for each try once templates are rendered. Plain functions of a
:class:`JobRequest`: nothing here reads the operator."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import is_template
from airflow_provider_jax.contract.backend import BackendTraits, cluster_deadline_seconds
from airflow_provider_jax.contract.elastic import resize_env
from airflow_provider_jax.manifest import data_inputs as data_inputs_module
from airflow_provider_jax.manifest.data_inputs import Data
from airflow_provider_jax.manifest.in_place_restart import AGENT_IMAGE_EXTRA, AGENT_IMAGE_STAND_IN
from airflow_provider_jax.manifest.local_checkpoints import MTC_EXTRA
from airflow_provider_jax.manifest.pathways import (
    DEFAULT_PROXY_IMAGE,
    DEFAULT_SERVER_IMAGE,
    Pathways,
    check_scratch,
    holds_scratch,
)
from airflow_provider_jax.manifest.pod_command import command_env, python_call
from airflow_provider_jax.manifest.provider_keys import (
    CAPACITY_CHOICE_ANNOTATION,
    CAPACITY_WAIT_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SLICES_ANNOTATION,
    refuse_managed,
)
from airflow_provider_jax.manifest.spec import SAFE_SECURITY_CONTEXT, JaxJobSpec
from airflow_provider_jax.operators.data_staging import staging_uri
from airflow_provider_jax.operators.job_arguments import JobArguments, To, routed
from airflow_provider_jax.operators.job_plan import JobPlan
from airflow_provider_jax.operators.secret_guard import refuse_masked_values
from airflow_provider_jax.runtime.output_paths import check_storage_path

TEMPLATED_IMAGE = "templated:image"  # stands in for a Jinja image until it is rendered
LOCAL_IMAGE = "local-backend"  # the local backend runs no image; the manifest still names one
GKE_API = "https://container.googleapis.com/v1"


@dataclass(frozen=True)
class JobRequest:
    """What one build of the job spec reads: the operator's arguments (checked, and rendered
    and checked again where ``rendered``), what they come to together (``plan``), and what the
    try adds. Plain data: the spec follows from it alone."""

    arguments: JobArguments
    plan: JobPlan
    traits: BackendTraits
    rendered: bool
    execution_timeout: datetime.timedelta | None = None
    capacity_choice: int = 0  # which of capacity.choices this build renders
    slices: int | None = None  # an elastic job's size now, when not num_slices
    resized: str | None = None  # why it was made at that size (contract/elastic.py)
    try_number: int = 0  # 0 at parse and in a dry run
    # The Kubernetes connection's extras, read only when a rendered build needs them.
    connection_extras: Callable[[], Mapping[str, Any]] = dict


def mapping(value: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """A templated mapping argument as the spec takes it: checked (once rendered, again) by its
    kind, so before rendering an argument that is one template string is still unknown."""
    return dict(value) if isinstance(value, Mapping) else {}


def build_spec(
    request: JobRequest,
    *,
    name: str,
    program: tuple[Sequence[str], dict[str, str]],
    call_arguments: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
) -> JaxJobSpec:
    """The job spec (the SPEC route's one reader): every argument routed to it by name, as the
    spec's field of the same name, and the fields computed here from the others."""
    rendered, a, plan = request.rendered, request.arguments, request.plan
    output_dir = a.output_dir
    if output_dir is not None and (rendered or not is_template(output_dir)):
        check_storage_path("output_dir", output_dir)  # as the sensor and the pods do
    inputs = data_inputs(call_arguments)
    if rendered and request.traits.remote:
        for item in inputs:  # a local folder travels through output_dir's bucket
            if item.on_this_host:
                item.staged = staging_uri(item, output_dir)
    command, env = program
    image = a.image if a.image is not None else default_image(request.traits)
    if not rendered and is_template(image):
        image = TEMPLATED_IMAGE  # checked once rendered
    # A label, annotation or env name the provider sets would silently lose to it.
    refuse_managed(mapping(a.labels), mapping(a.annotations), mapping(a.env))
    choice = {}
    if plan.capacity.by_provider:  # which choice of the list: a reattach goes on from it
        choice[CAPACITY_CHOICE_ANNOTATION] = str(request.capacity_choice)
        if (wait := plan.capacity.wait_for(request.capacity_choice)) is not None:
            choice[CAPACITY_WAIT_ANNOTATION] = f"{wait:g}"
    fields = {field: getattr(a, field) for field in routed(To.SPEC)}
    if request.slices is not None:  # an elastic job, made again at another size
        fields["num_slices"] = request.slices
        choice[SLICES_ANNOTATION] = str(request.slices)
    spec = JaxJobSpec(
        **fields,
        name=name,
        accelerator=plan.accelerator,
        capacity=plan.capacity,
        image=image,
        command=command,
        env={**mapping(a.env), **env, **resize_env(request.resized)},
        resources=mapping(a.container_resources),
        node_selector=mapping(a.node_selector),
        security_context=(
            SAFE_SECURITY_CONTEXT if a.security_context is None else a.security_context
        ),
        labels={**mapping(a.labels), **(labels or {})},
        annotations={**mapping(a.annotations), **choice},
        capacity_choice=request.capacity_choice,
        active_deadline_seconds=cluster_deadline_seconds(request.execution_timeout),
        pathways=_pathways(request),
        data_inputs=tuple(d for d in inputs if d.fuse),
        identity_provider=identity_provider(a),
        unrendered=not rendered,
        **_recovery(request),
    )
    if rendered:  # the values are real now: none may be one Airflow masks
        refuse_masked_values(mapping(a.env), call_arguments)
    return spec


def default_image(traits: BackendTraits) -> str:
    """``[jax] default_image``, else a stand-in on the local backend, which runs none."""
    if configured := settings.get("default_image"):
        return configured
    if not traits.needs_image:
        return LOCAL_IMAGE
    raise ValueError(
        "image is required on Kubernetes: give image= (the image every pod runs, with JAX "
        "for the accelerator), or set [jax] default_image. The local backend needs none."
    )


def data_inputs(call_arguments: Mapping[str, Any]) -> list[Data]:
    """The ``Data(...)`` values among the program's arguments."""
    inputs: list[Data] = []
    data_inputs_module.encode(call_arguments, inputs)
    return inputs


def identity_provider(a: JobArguments) -> str | None:
    """The GKE cluster's Workload Identity provider, for GCS FUSE in hostNetwork pods."""
    where = (a.project_id, a.location, a.cluster_name)
    if not all(isinstance(part, str) and part for part in where):
        return None
    project, location, cluster = where
    return f"{GKE_API}/projects/{project}/locations/{location}/clusters/{cluster}"


def _pathways(request: JobRequest) -> Pathways | None:
    """``pathways`` with its images (the connection's, where it names them) and scratch
    location: as given, else under a ``gs://`` output_dir. Kubernetes needs one; the local
    backend runs no Pathways server."""
    pathways, output_dir = request.plan.pathways, request.arguments.output_dir
    if pathways is not None and request.rendered and request.traits.reads_connection:
        pathways = _connection_images(pathways, request.connection_extras())
    if pathways is None or pathways.scratch_location is not None:
        return pathways
    if output_dir is not None and not request.rendered and is_template(output_dir):
        return pathways  # checked once rendered
    if holds_scratch(output_dir):
        return dataclasses.replace(pathways, scratch_location=pathways.scratch(output_dir))
    if request.traits.remote:
        if output_dir is None:
            raise ValueError(
                "pathways= on Kubernetes needs a gs:// scratch location: give a gs:// "
                "output_dir, or Pathways(scratch_location='gs://bucket/pathways')."
            )
        check_scratch(output_dir)  # raises: Pathways shares its scratch data through GCS
    return pathways


def connection_extras(cluster_name: str | None, kubernetes_conn_id: str | None) -> dict[str, Any]:
    """The Kubernetes connection's extras (none for a GKE cluster named by cluster_name, or
    where the hook falls back to in-cluster or kubeconfig)."""
    if cluster_name or not kubernetes_conn_id:
        return {}
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return BaseHook.get_connection(kubernetes_conn_id).extra_dejson
    except AirflowNotFoundException:
        return {}


def _recovery(request: JobRequest) -> dict[str, Any]:
    """The cluster's side of ``restart_strategy`` and ``local_checkpoint_size``: JobSet's
    agent image (the connection extra, else ``[jax]``) and whether the cluster has GKE's
    multi-tier checkpointing. Before rendering (at parse, in a dry run) and locally, the
    agent's name and release stand in."""
    stand_in = {"restart_agent_image": AGENT_IMAGE_STAND_IN, "multi_tier_checkpointing": False}
    a = request.arguments
    wanted = a.restart_strategy == "in_place" or a.local_checkpoint_size
    if not request.rendered or not request.traits.reads_connection or not wanted:
        return stand_in
    extras = request.connection_extras()
    image = extras.get(AGENT_IMAGE_EXTRA) or settings.get(AGENT_IMAGE_EXTRA)
    multi_tier = extras.get(MTC_EXTRA, False)
    if not isinstance(multi_tier, bool):
        raise ValueError(
            f"the Kubernetes connection's extra {MTC_EXTRA!r} must be true or false, got "
            f"{multi_tier!r}."
        )
    return {"restart_agent_image": image or None, "multi_tier_checkpointing": multi_tier}


def _connection_images(pathways: Pathways, extras: Mapping[str, Any]) -> Pathways:
    """The Kubernetes connection's ``pathways_server_image`` / ``pathways_proxy_image``
    extras replace the default images (a cluster that pulls from its own mirror); images
    set on ``Pathways(...)`` win."""
    chosen = {
        field: extras[f"pathways_{field}"]
        for field, default in (
            ("server_image", DEFAULT_SERVER_IMAGE),
            ("proxy_image", DEFAULT_PROXY_IMAGE),
        )
        if getattr(pathways, field) == default and extras.get(f"pathways_{field}")
    }
    return dataclasses.replace(pathways, **chosen) if chosen else pathways


def command_program(request: JobRequest) -> tuple[list[str], dict[str, str]]:
    """``command=``: the argv as given. What needs the runtime's ``report()`` is refused."""
    a = request.arguments
    command = a.command
    if isinstance(command, str):
        return [command], {}  # a template string: the spec's check refuses it, or its render
    for name, given in (
        ("progress_timeout", a.progress_timeout),
        ("total_steps", a.total_steps),
        ("profile_steps", a.profile_steps),
        ("debug_dump", a.debug_dump),
    ):
        if given:
            raise ValueError(
                f"{name} works with report() calls, which need the runtime: use "
                "entrypoint= or @task.jax_tpu/@task.jax_gpu, not command=."
            )
    return list(command or ()), command_env(a.require_distributed)


# The CALL route's arguments this module puts in the call itself, by their own names or under
# the runtime's: every other one routed there travels as it is, under its own name, for the
# runtime to read (so an option for the pods is declared, written into the signature, and
# read in the runtime: three files).
_CALL_HANDLED = frozenset(
    {
        "entrypoint",
        "entrypoint_kwargs",
        "argv",
        "initialize_distributed",
        "pip_packages",
        "python",
        "progress_timeout",
        "total_steps",
        "profile_steps",
        "debug_dump",
        "require_distributed",
    }
)


def runtime_call(request: JobRequest, jobset: str, **call: Any) -> tuple[list[str], dict[str, str]]:
    """The runtime's call of a function (an entrypoint, or a decorated function's source) on
    every host, and the env that carries it (the CALL route's one reader)."""
    a, plan = request.arguments, request.plan
    call["kwargs"] = data_inputs_module.encode(call.get("kwargs") or {}, [])  # Data as JSON
    call["args"] = data_inputs_module.encode(call.get("args") or [], [])
    options = {name: getattr(a, name) for name in routed(To.CALL) if name not in _CALL_HANDLED}
    return python_call(
        output_dir=a.output_dir,
        initialize=plan.initialize_distributed,
        pip_packages=list(plan.pip_packages),
        python=a.python,
        progress_timeout=a.progress_timeout,
        total_steps=a.total_steps,
        argv=list(a.argv) if a.argv is not None and not isinstance(a.argv, str) else a.argv,
        diagnostics=plan.diagnostics.call(a.output_dir, jobset, request.try_number),
        options=options,
        **call,
    )


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
