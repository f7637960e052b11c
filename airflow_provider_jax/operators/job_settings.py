"""From an operator and its task instance to the plain settings a backend gets."""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from airflow.sdk import conf

from airflow_provider_jax import settings
from airflow_provider_jax.contract.backend import (
    ClusterSettings,
    JobSettings,
    try_deadline,
)
from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.operators.deadline_alerts import evaluate
from airflow_provider_jax.runtime.output_paths import checkpoints_uri

if TYPE_CHECKING:
    from airflow.sdk import Context


class JaxJobFields(Protocol):
    """What of a JAX operator the settings are made from."""

    namespace: str
    log: Any
    execution_timeout: datetime.timedelta | None
    output_dir: str | None
    command: Sequence[str] | None
    on_finish_action: str
    deferrable: bool
    watch: WatchOptions
    kubernetes_conn_id: str | None
    cluster_name: str | None
    project_id: str | None
    location: str | None
    gcp_conn_id: str
    impersonation_chain: str | Sequence[str] | None
    dag: Any
    num_slices: int
    slices_now: int
    elastic: ElasticSlices | None
    goodput_clock: Any
    goodput_before: dict[str, Any] | None
    deadline: tuple[Any, ...] | None

    def jobset_name_for(self, context: Context) -> str: ...

    def has_dag(self) -> bool: ...


def job_settings(op: JaxJobFields, context: Context) -> JobSettings:
    """This try's settings; the deadline is computed here and nowhere else."""
    ti = context["ti"]
    chain = op.impersonation_chain
    return JobSettings(
        name=op.jobset_name_for(context),
        namespace=op.namespace,
        log=op.log,
        deadline=try_deadline(op.execution_timeout, ti.start_date, time.time()),
        execution_timeout_s=(
            op.execution_timeout.total_seconds() if op.execution_timeout is not None else None
        ),
        output_dir=op.output_dir,
        on_finish_action=op.on_finish_action,
        deferrable=op.deferrable,
        max_result_bytes=settings.get("max_result_bytes"),
        cluster=ClusterSettings(
            kubernetes_conn_id=op.kubernetes_conn_id,
            cluster_name=op.cluster_name,
            project_id=op.project_id,
            location=op.location,
            gcp_conn_id=op.gcp_conn_id,
            impersonation_chain=tuple(chain) if isinstance(chain, list | tuple) else chain,
        ),
        pythonpath=tuple(dag_pythonpath(op)),
        local_secrets_dir=settings.get("local_secrets_dir") or None,
        watch=with_deadlines(
            with_checkpoints(sized(op.watch, op.slices_now, op.num_slices), op.output_dir),
            op,
            context,
        ),
        resume_settle_s=settings.get("resume_settle_seconds"),
        local_accelerators=settings.get("local_accelerators"),
        expects_result=op.command is None,
        elastic=(
            op.elastic.at(op.slices_now, checkpoints_uri(op.output_dir))
            if op.elastic is not None and op.output_dir
            else None
        ),
        goodput_clock=op.goodput_clock,
        goodput_before=op.goodput_before,
        local_capacity_file=settings.get("local_capacity_file") or None,
    )


def sized(watch: WatchOptions, slices: int, num_slices: int) -> WatchOptions:
    """``watch`` for a JobSet of ``slices`` (an elastic job's size now) of ``num_slices``."""
    if slices == num_slices:
        return watch
    return dataclasses.replace(watch, hosts=watch.hosts // num_slices * slices)


def with_checkpoints(watch: WatchOptions, output_dir: str | None) -> WatchOptions:
    """``watch`` with the rendered ``<output_dir>/checkpoints`` whose freshness it looks at."""
    if not watch.checkpoint_warn_after or not output_dir:
        return watch
    return dataclasses.replace(watch, checkpoint_dir=checkpoints_uri(output_dir))


def with_deadlines(watch: WatchOptions, op: JaxJobFields, context: Context) -> WatchOptions:
    """``watch`` with the DAG's and the task's deadlines, evaluated for this run."""
    dag_alerts = (op.dag.deadline or []) if op.has_dag() else []
    alerts = [*dag_alerts, *(op.deadline or ())]
    if not alerts:
        return watch
    return dataclasses.replace(watch, deadlines=evaluate(alerts, context["dag_run"], op.log))


def dag_pythonpath(op: JaxJobFields) -> list[str]:
    """The DAG file's folder and the DAGs folder, so entrypoint modules beside a DAG import
    in local processes."""
    folders = []
    if op.has_dag() and op.dag.fileloc:
        folders.append(os.path.dirname(os.path.abspath(op.dag.fileloc)))
    if dags_folder := conf.get("core", "dags_folder", fallback=None):
        folders.append(os.path.abspath(os.path.expanduser(dags_folder)))
    return [f for f in dict.fromkeys(folders) if os.path.isdir(f)]
