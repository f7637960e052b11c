"""From an operator and its task instance to the plain settings a backend gets."""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow.sdk import conf

from airflow_provider_jax import settings
from airflow_provider_jax.contract.backend import (
    ClusterSettings,
    JobSettings,
    try_deadline,
)
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.operators.deadline_alerts import evaluate
from airflow_provider_jax.operators.job_arguments import JobArguments
from airflow_provider_jax.operators.job_plan import JobPlan
from airflow_provider_jax.runtime.output_paths import checkpoints_uri

if TYPE_CHECKING:
    from airflow.sdk import Context


@dataclass(frozen=True)
class TryState:
    """What the operator knows of this try beyond its arguments: the JobSet's name, an elastic
    job's size now, and its goodput so far (the local backend's clock, or the ledger of its
    earlier JobSets)."""

    name: str
    slices: int
    goodput_clock: Any = None
    goodput_before: dict[str, Any] | None = None


def job_settings(
    a: JobArguments,
    plan: JobPlan,
    state: TryState,
    context: Context,
    *,
    execution_timeout: datetime.timedelta | None,
    dag: Any,
    log: Any,
) -> JobSettings:
    """This try's settings (the SETTINGS route's one reader); the deadline is computed here and
    nowhere else."""
    ti = context["ti"]
    chain = a.impersonation_chain
    return JobSettings(
        name=state.name,
        namespace=a.namespace,
        log=log,
        deadline=try_deadline(execution_timeout, ti.start_date, time.time()),
        execution_timeout_s=(
            execution_timeout.total_seconds() if execution_timeout is not None else None
        ),
        output_dir=a.output_dir,
        on_finish_action=a.on_finish_action,
        deferrable=plan.deferrable,
        max_result_bytes=settings.get("max_result_bytes"),
        cluster=ClusterSettings(
            kubernetes_conn_id=a.kubernetes_conn_id,
            cluster_name=a.cluster_name,
            project_id=a.project_id,
            location=a.location,
            gcp_conn_id=a.gcp_conn_id,
            impersonation_chain=chain if chain is None or isinstance(chain, str) else tuple(chain),
        ),
        pythonpath=tuple(dag_pythonpath(dag)),
        local_secrets_dir=settings.get("local_secrets_dir") or None,
        watch=with_deadlines(
            with_checkpoints(sized(plan.watch, state.slices, a.num_slices), a.output_dir),
            [*((dag.deadline or []) if dag is not None else []), *_alerts(a.deadline)],
            context,
            log,
        ),
        resume_settle_s=settings.get("resume_settle_seconds"),
        local_accelerators=settings.get("local_accelerators"),
        expects_result=a.command is None,
        elastic=(
            plan.elastic.at(state.slices, checkpoints_uri(a.output_dir))
            if plan.elastic is not None and a.output_dir
            else None
        ),
        goodput_clock=state.goodput_clock,
        goodput_before=state.goodput_before,
        local_capacity_file=settings.get("local_capacity_file") or None,
    )


def _alerts(deadline: Any) -> tuple[Any, ...]:
    """The task's ``deadline=`` as a tuple (its kind keeps one alert as a tuple of one)."""
    if deadline is None:
        return ()
    return tuple(deadline) if isinstance(deadline, list | tuple) else (deadline,)


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


def with_deadlines(
    watch: WatchOptions, alerts: Sequence[Any], context: Context, log: Any
) -> WatchOptions:
    """``watch`` with the DAG's and the task's deadlines (``alerts``), evaluated for this run."""
    if not alerts:
        return watch
    return dataclasses.replace(watch, deadlines=evaluate(alerts, context["dag_run"], log))


def dag_pythonpath(dag: Any) -> list[str]:
    """The DAG file's folder and the DAGs folder, so entrypoint modules beside a DAG import
    in local processes."""
    folders = []
    if dag is not None and dag.fileloc:
        folders.append(os.path.dirname(os.path.abspath(dag.fileloc)))
    if dags_folder := conf.get("core", "dags_folder", fallback=None):
        folders.append(os.path.abspath(os.path.expanduser(dags_folder)))
    return [f for f in dict.fromkeys(folders) if os.path.isdir(f)]
