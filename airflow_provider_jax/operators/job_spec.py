"""How an operator's fields become a job spec and a JobSet manifest: at parse (checked with the
literal values), for a dry run, and for each try once templates are rendered."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_jax import settings
from airflow_provider_jax.arguments import is_template
from airflow_provider_jax.contract.backend import BackendTraits, cluster_deadline_seconds
from airflow_provider_jax.manifest import data_inputs
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.capacity_choices import CapacityChoices
from airflow_provider_jax.manifest.data_inputs import Data
from airflow_provider_jax.manifest.in_place_restart import AGENT_IMAGE_EXTRA, AGENT_IMAGE_STAND_IN
from airflow_provider_jax.manifest.local_checkpoints import MTC_EXTRA
from airflow_provider_jax.manifest.named_storage import Storage
from airflow_provider_jax.manifest.names import jobset_name
from airflow_provider_jax.manifest.pathways import (
    DEFAULT_PROXY_IMAGE,
    DEFAULT_SERVER_IMAGE,
    Pathways,
    check_scratch,
)
from airflow_provider_jax.manifest.pod_command import python_call, split_pip_packages
from airflow_provider_jax.manifest.provider_keys import (
    CAPACITY_CHOICE_ANNOTATION,
    CAPACITY_WAIT_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    TASK_INSTANCE_ANNOTATION,
    refuse_managed,
    task_instance_annotation,
)
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators.argument_types import as_list, as_mapping
from airflow_provider_jax.operators.data_staging import staging_uri
from airflow_provider_jax.operators.secret_guard import refuse_masked_values
from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.output_paths import check_storage_path

if TYPE_CHECKING:
    from airflow.sdk import Context

# A JaxJobSpec field is computed for each build (build_spec), keeps the spec's default (these),
# or is the operator attribute of the same name: an option is declared once, in the spec.
SPEC_DEFAULTS = frozenset({"megascale_port"})
SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(JaxJobSpec) if f.name not in SPEC_DEFAULTS)
TEMPLATED_IMAGE = "templated:image"  # stands in for a Jinja image until it is rendered
LOCAL_IMAGE = "local-backend"  # the local backend runs no image; the manifest still names one
GKE_API = "https://container.googleapis.com/v1"


class JobSpecBuilder:
    """The spec-building half of :class:`~airflow_provider_jax.operators.job_operator.JaxJobOperator`."""

    # Set by the operator.
    task_id: str
    log: Any
    pip_packages: list[str]
    restart_strategy: str
    local_checkpoint_size: str | None
    name: str | None
    output_dir: str | None
    image: str | None
    command: Sequence[str] | str | None
    pathways: Pathways | None
    backend_traits: BackendTraits
    project_id: str | None
    storage: tuple[Storage, ...]
    location: str | None
    cluster_name: str | None
    kubernetes_conn_id: str | None
    capacity: CapacityChoices
    capacity_choice: int  # which of capacity.choices the next build_manifest renders
    pod_template_override: Mapping[str, Any] | None
    _try_number: int
    _call_name: str  # the JobSet's name, for the call's diagnostics folder

    if TYPE_CHECKING:

        def diagnostics_call(self, jobset_name: str) -> dict[str, Any]: ...  # RunDiagnostics

    def set_controller(self, pathways: object, initialize_distributed: bool | None) -> None:
        """``pathways=`` and ``initialize_distributed``: under Pathways one process drives
        every chip, so there is no ``jax.distributed`` to join."""
        self.pathways = Pathways.of(pathways)
        if self.pathways is not None and initialize_distributed:
            raise ValueError(
                "initialize_distributed=True does not go with pathways=: under Pathways one "
                "process drives every chip and joins no jax.distributed. Leave it unset."
            )
        if initialize_distributed is None:
            initialize_distributed = self.pathways is None
        self.initialize_distributed = initialize_distributed

    def set_pip_packages(self, pip_packages: Sequence[str]) -> None:
        """What to ``pip install`` at process start; JAX itself is the image's, never these."""
        self.pip_packages, dropped = split_pip_packages(as_list("pip_packages", pip_packages, str))
        if dropped:
            self.log.warning(
                "%s: not installing %s at process start; the image's accelerator-matched JAX "
                "is used instead.",
                self.task_id,
                dropped,
            )

    def _check_static_spec(self) -> None:
        name = self.name if self.name is not None and not is_template(self.name) else "x"
        spec = self.build_spec(name=name, rendered=False)
        if self.pod_template_override:  # what it merges into is checked whole, mounts too
            build_jobset(spec)

    def build_spec(
        self, *, name: str, labels: Mapping[str, str] | None = None, rendered: bool = True
    ) -> JaxJobSpec:
        """The job spec from this operator's (rendered) fields."""
        if self.output_dir is not None and (rendered or not is_template(self.output_dir)):
            check_storage_path("output_dir", self.output_dir)  # as the sensor and the pods do
        inputs = self.data_inputs(rendered)
        if rendered and self.backend_traits.remote:
            for item in inputs:  # a local folder travels through output_dir's bucket
                if not item.is_gcs:
                    item.staged = staging_uri(item, self.output_dir)
        self._call_name = name  # a local run's diagnostics folder is named after it
        command, env = self._program(rendered)
        image = self.image if self.image is not None else self._default_image()
        if not rendered and is_template(image):
            image = TEMPLATED_IMAGE  # checked once rendered
        # A label, annotation or env name the provider sets would silently lose to it.
        refuse_managed(
            self._mapping("labels", rendered),
            self._mapping("annotations", rendered),
            self._mapping("env", rendered),
        )
        choice = {}
        if self.capacity.by_provider:  # which choice of the list: a reattach goes on from it
            choice[CAPACITY_CHOICE_ANNOTATION] = str(self.capacity_choice)
            if (wait := self.capacity.wait_for(self.capacity_choice)) is not None:
                choice[CAPACITY_WAIT_ANNOTATION] = f"{wait:g}"
        computed = {
            "name": name,
            "image": image,
            "command": command,
            "env": {**self._mapping("env", rendered), **env},
            "resources": self.container_resources,
            "labels": {**self._mapping("labels", rendered), **(labels or {})},
            "annotations": {**self._mapping("annotations", rendered), **choice},
            "active_deadline_seconds": cluster_deadline_seconds(self.execution_timeout),
            "pathways": self._pathways(rendered),
            "data_inputs": tuple(d for d in inputs if d.fuse),
            "identity_provider": self._identity_provider(),
            "unrendered": not rendered,
            **self._recovery(rendered),
        }
        held = {f: getattr(self, f) for f in SPEC_FIELDS if f not in computed}
        spec = JaxJobSpec(**held, **computed)
        if rendered:  # the values are real now: none may be one Airflow masks
            refuse_masked_values(self.env, self._call_arguments(rendered))
        return spec

    def _default_image(self) -> str:
        """``[jax] default_image``, else a stand-in on the local backend, which runs none."""

        if configured := settings.get("default_image"):
            return configured
        if not self.backend_traits.needs_image:
            return LOCAL_IMAGE
        raise ValueError(
            "image is required on Kubernetes: give image= (the image every pod runs, with JAX "
            "for the accelerator), or set [jax] default_image. The local backend needs none."
        )

    def data_inputs(self, rendered: bool) -> list[Data]:
        """The ``Data(...)`` values among the function's arguments."""
        inputs: list[Data] = []
        data_inputs.encode(self._call_arguments(rendered), inputs)
        return inputs

    def _identity_provider(self) -> str | None:
        """The GKE cluster's Workload Identity provider, for GCS FUSE in hostNetwork pods."""
        where = (self.project_id, self.location, self.cluster_name)
        if not all(isinstance(part, str) and part for part in where):
            return None
        project, location, cluster = where
        return f"{GKE_API}/projects/{project}/locations/{location}/clusters/{cluster}"

    def _pathways(self, rendered: bool) -> Pathways | None:
        """``pathways`` with its images (the connection's, where it names them) and scratch
        location: as given, else under a ``gs://`` output_dir. Kubernetes needs one; the
        local backend runs no Pathways server."""
        pathways, output_dir = self.pathways, self.output_dir
        if pathways is not None and rendered and self.backend_traits.reads_connection:
            pathways = self._connection_images(pathways)
        if pathways is None or pathways.scratch_location is not None:
            return pathways
        if output_dir is not None and not rendered and is_template(output_dir):
            return pathways  # checked once rendered
        if Location.is_gcs_uri(output_dir):
            return dataclasses.replace(pathways, scratch_location=pathways.scratch(output_dir))
        if self.backend_traits.remote:
            if output_dir is None:
                raise ValueError(
                    "pathways= on Kubernetes needs a gs:// scratch location: give a gs:// "
                    "output_dir, or Pathways(scratch_location='gs://bucket/pathways')."
                )
            check_scratch(output_dir)  # raises: Pathways shares its scratch data through GCS
        return pathways

    def _connection_extras(self) -> dict[str, Any]:
        """The Kubernetes connection's extras (none for a GKE cluster named by cluster_name,
        or where the hook falls back to in-cluster or kubeconfig)."""
        if self.cluster_name or not self.kubernetes_conn_id:
            return {}
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            return BaseHook.get_connection(self.kubernetes_conn_id).extra_dejson
        except AirflowNotFoundException:
            return {}

    def _recovery(self, rendered: bool) -> dict[str, Any]:
        """The cluster's side of ``restart_strategy`` and ``local_checkpoint_size``: JobSet's
        agent image (the connection extra, else ``[jax]``) and whether the cluster has GKE's
        multi-tier checkpointing. Before rendering (at parse, in a dry run) and locally, the
        agent's name and release stand in."""
        stand_in = {"restart_agent_image": AGENT_IMAGE_STAND_IN, "multi_tier_checkpointing": False}
        wanted = self.restart_strategy == "in_place" or self.local_checkpoint_size is not None
        if not rendered or not self.backend_traits.reads_connection or not wanted:
            return stand_in

        extras = self._connection_extras()
        image = extras.get(AGENT_IMAGE_EXTRA) or settings.get(AGENT_IMAGE_EXTRA)
        multi_tier = extras.get(MTC_EXTRA, False)
        if not isinstance(multi_tier, bool):
            raise ValueError(
                f"the Kubernetes connection's extra {MTC_EXTRA!r} must be true or false, got "
                f"{multi_tier!r}."
            )
        return {"restart_agent_image": image or None, "multi_tier_checkpointing": multi_tier}

    def _connection_images(self, pathways: Pathways) -> Pathways:
        """The Kubernetes connection's ``pathways_server_image`` / ``pathways_proxy_image``
        extras replace the default images (a cluster that pulls from its own mirror); images
        set on ``Pathways(...)`` win."""
        if not (extras := self._connection_extras()):
            return pathways
        chosen = {
            field: extras[f"pathways_{field}"]
            for field, default in (
                ("server_image", DEFAULT_SERVER_IMAGE),
                ("proxy_image", DEFAULT_PROXY_IMAGE),
            )
            if getattr(pathways, field) == default and extras.get(f"pathways_{field}")
        }
        return dataclasses.replace(pathways, **chosen) if chosen else pathways

    def _program(self, rendered: bool) -> tuple[Sequence[str], dict[str, str]]:
        """Command and env of the program. Before rendering, Jinja strings are still strings,
        which JSON-encodes fine, so every value that is already real gets checked."""
        if isinstance(self.command, str):
            return self.command, {}  # a string, which the spec rejects
        if self.command is not None:
            for name in ("progress_timeout", "total_steps", "profile_steps", "debug_dump"):
                if getattr(self, name):
                    raise ValueError(
                        f"{name} works with report() calls, which need the runtime: use "
                        "entrypoint= or @task.jax_tpu/@task.jax_gpu, not command=."
                    )
            return list(self.command), {}
        kwargs = self._mapping("entrypoint_kwargs", rendered)
        return self._python_call(entrypoint=self.entrypoint, kwargs=kwargs)

    def _mapping(self, field: str, rendered: bool) -> dict[str, Any]:
        """A templated mapping field: checked again once rendered (a template can render to
        anything); before, a field that is one template string is still unknown."""
        value = as_mapping(field, getattr(self, field), templated=not rendered)
        return value if isinstance(value, dict) else {}

    def _python_call(self, **call: Any) -> tuple[list[str], dict[str, str]]:
        # Data(...) travels as its JSON marker.
        call["kwargs"] = data_inputs.encode(call.get("kwargs") or {}, [])
        call["args"] = data_inputs.encode(call.get("args") or [], [])
        return python_call(
            output_dir=self.output_dir,
            initialize=self.initialize_distributed,
            pip_packages=self.pip_packages,
            python=self.python,
            progress_timeout=self.progress_timeout,
            total_steps=self.total_steps,
            diagnostics=self.diagnostics_call(self._call_name),
            **call,
        )

    def _call_arguments(self, rendered: bool) -> Mapping[str, Any]:
        """The arguments shipped to every process, as they will travel."""
        return self.entrypoint_kwargs if self.entrypoint else {}

    def jobset_name_for(self, context: Context) -> str:
        if self.name:
            return self.name
        ti = context["ti"]
        return jobset_name(
            ti.dag_id,
            ti.task_id,
            ti.run_id,
            ti.map_index if ti.map_index is not None else -1,
            self.accelerator,
            self.num_slices,
            self.pathways is not None,
        )

    def build_manifest(self, context: Context) -> dict[str, Any]:
        """Render the JobSet for this task instance (after templates are rendered)."""
        ti = context["ti"]
        labels = airflow_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number)
        self._try_number = ti.try_number
        spec = self.build_spec(name=self.jobset_name_for(context), labels=labels)
        manifest = build_jobset(spec)
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
        name = self.name or jobset_name(
            dag_id,
            self.task_id,
            "dry_run",
            -1,
            self.accelerator,
            self.num_slices,
            self.pathways is not None,
        )
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
