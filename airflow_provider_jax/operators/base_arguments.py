"""Airflow's own operator arguments (``BaseOperator.__init__``'s), which the JAX
operators take as ``**kwargs`` and pass on: a TypedDict, so a type checker refuses a
misspelt argument, or another operator's. Written by ``make docs``
(``argument_signature.py``) from the installed Airflow's signature; a test fails while
it is stale."""

from __future__ import annotations

from typing import TYPE_CHECKING, Required, TypedDict

if TYPE_CHECKING:
    import collections.abc
    from collections.abc import Collection, Sequence
    from datetime import datetime, timedelta
    from typing import Any

    from airflow.sdk.bases.operator import TaskPostExecuteHook, TaskPreExecuteHook
    from airflow.sdk.definitions._internal.abstractoperator import TaskStateChangeCallback
    from airflow.sdk.definitions.dag import DAG
    from airflow.sdk.definitions.retry_policy import RetryPolicy
    from airflow.sdk.definitions.taskgroup import TaskGroup
    from airflow.sdk.types import WeightRuleParam


class AirflowArguments(TypedDict, total=False):
    """``BaseOperator``'s keyword arguments, each with its type."""

    task_id: Required[str]
    owner: str
    email: str | Sequence[str] | None
    email_on_retry: bool
    email_on_failure: bool
    retries: int | None
    retry_delay: timedelta | float
    retry_exponential_backoff: float
    max_retry_delay: timedelta | float | None
    retry_policy: RetryPolicy | None
    start_date: datetime | None
    end_date: datetime | None
    depends_on_past: bool
    ignore_first_depends_on_past: bool
    wait_for_past_depends_before_skipping: bool
    wait_for_downstream: bool
    dag: DAG | None
    params: collections.abc.MutableMapping[str, Any] | None
    default_args: dict | None
    priority_weight: int
    weight_rule: WeightRuleParam
    queue: str
    pool: str | None
    pool_slots: int
    sla: timedelta | None
    execution_timeout: timedelta | None
    on_execute_callback: TaskStateChangeCallback | Collection[TaskStateChangeCallback] | None
    on_failure_callback: TaskStateChangeCallback | list[TaskStateChangeCallback] | None
    on_success_callback: TaskStateChangeCallback | Collection[TaskStateChangeCallback] | None
    on_retry_callback: TaskStateChangeCallback | list[TaskStateChangeCallback] | None
    on_skipped_callback: TaskStateChangeCallback | Collection[TaskStateChangeCallback] | None
    pre_execute: TaskPreExecuteHook | None
    post_execute: TaskPostExecuteHook | None
    trigger_rule: str
    resources: dict[str, Any] | None
    run_as_user: str | None
    map_index_template: str | None
    max_active_tis_per_dag: int | None
    max_active_tis_per_dagrun: int | None
    executor: str | None
    executor_config: dict | None
    do_xcom_push: bool
    multiple_outputs: bool
    inlets: Any | None
    outlets: Any | None
    task_group: TaskGroup | None
    doc: str | None
    doc_md: str | None
    doc_json: str | None
    doc_yaml: str | None
    doc_rst: str | None
    task_display_name: str | None
    logger_name: str | None
    allow_nested_operators: bool
    render_template_as_native_obj: bool | None
