"""The Kubernetes backend of :class:`~airflow_provider_jax.operators.jax_job.JaxJobOperator`.

submit (or reattach) → defer to :class:`JobSetTrigger`, or await the very same trigger inline
when ``deferrable=False`` → read the leader's result, or explain the failure → apply
``on_finish_action``. Each task instance has one JobSet name across all its tries, so a retry
finds the JobSet of the try before: still running, it reattaches; finished, it is deleted and
replaced. There is never a second JobSet for one task instance.

Imported only when a task runs, never at DAG parse time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowTaskTimeout

from airflow_provider_jax import jobset_status as status
from airflow_provider_jax.exceptions import JaxJobFailed, JobSetConflict, ProcessFailure
from airflow_provider_jax.hooks.cluster import KubernetesCluster, cluster_from
from airflow_provider_jax.hooks.jobset import JobSetExists, JobSetHook, explain
from airflow_provider_jax.links.jobset import JobSetLogsLink, cloud_logging_url
from airflow_provider_jax.operators.jax_job import LAST_REPORT_XCOM_KEY
from airflow_provider_jax.results import read_result
from airflow_provider_jax.runtime import storage
from airflow_provider_jax.runtime.messages import RESULT_FILE, format_report, parse_message
from airflow_provider_jax.triggers.jobset import FAILED, SUCCESS, TIMEOUT, JobSetTrigger
from airflow_provider_jax.triggers.pod_startup import REASON as CANNOT_START

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_jax.operators.jax_job import JaxJobOperator

XCOM_NAME, XCOM_NAMESPACE = "jobset_name", "jobset_namespace"
TIMEOUT_GRACE = 60  # Airflow's own trigger timeout, after ours: a backstop only
MAX_FAILED_PODS = 4  # failed hosts shown in full in an error; the rest are counted
LOG_TAIL_LINES, LOG_TAIL_BYTES = 30, 8192


@dataclass(frozen=True)
class JobSetRef:
    """One JobSet, down to its uid: deleting by uid never touches a successor."""

    cluster: KubernetesCluster
    name: str
    namespace: str
    uid: str | None

    @property
    def where(self) -> str:
        return f"JobSet {self.namespace}/{self.name}"


def cluster_of(op: JaxJobOperator) -> KubernetesCluster:
    return cluster_from(
        kubernetes_conn_id=op.kubernetes_conn_id,
        cluster_name=op.cluster_name,
        project_id=op.project_id,
        location=op.location,
        gcp_conn_id=op.gcp_conn_id,
        impersonation_chain=op.impersonation_chain,
    )


def execute_on_kubernetes(op: JaxJobOperator, manifest: dict[str, Any], context: Context) -> Any:
    cluster = cluster_of(op)
    hook = cluster.hook()
    ref = submit(hook, cluster, manifest, op.log)
    op._jobset = ref
    _remember(op, ref, context)
    deadline = _deadline(op, context)
    trigger = JobSetTrigger(
        name=ref.name,
        namespace=ref.namespace,
        uid=ref.uid or "",
        cluster=cluster.to_dict(),
        deadline=deadline,
        poll_interval=op.poll_interval,
    )
    if op.deferrable:
        op.defer(
            trigger=trigger,
            method_name="execute_complete",
            kwargs={"cluster": cluster.to_dict()},
            timeout=None if deadline is None else deadline - time.time() + TIMEOUT_GRACE,
        )
    extras = None if cluster.is_gke else hook.conn_extras
    event = asyncio.run(trigger.wait(connection_extras=extras))
    return complete_on_kubernetes(op, context, event, cluster.to_dict())


def submit(
    hook: JobSetHook, cluster: KubernetesCluster, manifest: Mapping[str, Any], log: Any
) -> JobSetRef:
    """Create the task instance's JobSet, or attach to the one there: still running (an
    earlier try's, after a worker crash) or made by this very try. One an earlier try left
    finished is deleted first, and waited for, so a new try never runs beside it."""
    meta = manifest["metadata"]
    name, namespace, labels = meta["name"], meta["namespace"], meta.get("labels") or {}
    for _ in range(3):
        existing = hook.get_jobset(name, namespace)
        if existing is not None:
            uid = status.uid(existing)
            if not status.owned_by(existing, labels):
                owner = {
                    k: existing["metadata"].get("labels", {}).get(k) for k in status.IDENTITY_LABELS
                }
                raise JobSetConflict(
                    f"JobSet {namespace}/{name} exists but was not made for this task instance "
                    f"(its labels say {owner}). Delete it, or give the operator another name."
                )
            state = status.terminal_state(existing)
            deleting = status.is_deleting(existing)
            if not deleting and (state is None or status.same_try(existing, labels)):
                # Running, or this very try's own (a create whose reply was lost, then
                # retried): wait on it rather than run the job twice.
                why = "still running" if state is None else "made by this try"
                log.info("Reattaching to JobSet %s/%s (uid %s): %s.", namespace, name, uid, why)
                return JobSetRef(cluster, name, namespace, uid)
            log.info(
                "JobSet %s/%s from an earlier try is %s; deleting it to start afresh.",
                namespace,
                name,
                "being deleted" if deleting else state.lower(),
            )
            hook.delete_jobset(name, namespace, uid)
            hook.wait_until_gone(name, namespace, uid)
        try:
            created = hook.create_jobset(manifest)
        except JobSetExists:
            continue  # ours whose reply was lost, or a racing try: look at it again
        log.info("Created JobSet %s/%s (uid %s).", namespace, name, status.uid(created))
        return JobSetRef(cluster, name, namespace, status.uid(created))
    raise JobSetConflict(f"JobSet {namespace}/{name} keeps reappearing; is another try running?")


def _remember(op: JaxJobOperator, ref: JobSetRef, context: Context) -> None:
    """XCom the JobSet's name and namespace (and its logs link on GKE) before waiting."""
    ti = context["ti"]
    ti.xcom_push(key=XCOM_NAME, value=ref.name)
    ti.xcom_push(key=XCOM_NAMESPACE, value=ref.namespace)
    if op.project_id and op.location and op.cluster_name:
        url = cloud_logging_url(
            project_id=op.project_id,
            location=op.location,
            cluster_name=op.cluster_name,
            namespace=ref.namespace,
            name=ref.name,
        )
        ti.xcom_push(key=JobSetLogsLink().xcom_key, value=url)


def _deadline(op: JaxJobOperator, context: Context) -> float | None:
    """When ``execution_timeout`` runs out for this try, as epoch seconds."""
    if op.execution_timeout is None:
        return None
    started = context["ti"].start_date
    start = started.timestamp() if started is not None else time.time()
    return start + op.execution_timeout.total_seconds()


def complete_on_kubernetes(
    op: JaxJobOperator,
    context: Context,
    event: Mapping[str, Any],
    cluster: Mapping[str, Any] | None = None,
) -> Any:
    """Turn the trigger's event into the task's result or error, reading before deleting."""
    kubernetes = KubernetesCluster.from_dict(cluster) if cluster else cluster_of(op)
    ref = JobSetRef(kubernetes, event["name"], event["namespace"], event.get("uid") or None)
    op._jobset = ref
    hook = kubernetes.hook()
    outcome = event["status"]
    if outcome == SUCCESS:
        try:
            result, report = leader_result(op, hook, ref)
        finally:
            _finish(op, hook, ref, succeeded=True)
        if report is not None and context:
            context["ti"].xcom_push(key=LAST_REPORT_XCOM_KEY, value=report)
        return result
    if outcome == TIMEOUT:
        _delete(hook, ref, op.log)
        raise AirflowTaskTimeout(f"{ref.where} was deleted: {event['message']}.")
    error = (
        failure(hook, ref, event)
        if outcome == FAILED
        else JaxJobFailed(f"{ref.where}: {event['message']}")
    )
    _finish(op, hook, ref, succeeded=False, ended=outcome == FAILED)
    raise error


def leader_result(
    op: JaxJobOperator, hook: JobSetHook, ref: JobSetRef
) -> tuple[Any, dict[str, Any] | None]:
    """Process 0's return value and last progress report: from its termination message, or
    ``output_dir/result.json`` when the value was too big for one (or the pod is gone)."""
    leader = status.leader_pod(hook.list_jobset_pods(ref.name, ref.namespace))
    message = parse_message(status.termination_message(leader)) if leader else None
    if message is not None and message["ok"]:
        report = message.get("report")
        if report:
            op.log.info("Leader's last report: %s", format_report(report))
        if uri := message.get("result_uri"):
            return _read(op, uri), report
        return message.get("result"), report
    if op.output_dir:
        uri = storage.join(op.output_dir, RESULT_FILE)  # where the runtime puts a large one
        try:
            return _read(op, uri), None
        except FileNotFoundError:
            op.log.warning("No result: the leader left no termination message and no %s.", uri)
    return None, None


def _read(op: JaxJobOperator, uri: str) -> Any:
    op.log.info("Reading the leader's result from %s", uri)
    return read_result(uri, gcp_conn_id=op.gcp_conn_id, impersonation_chain=op.impersonation_chain)


def failure(hook: JobSetHook, ref: JobSetRef, event: Mapping[str, Any]) -> JaxJobFailed:
    """Why the JobSet failed: its conditions and restarts, then for each failed host its
    ``[slice/host]``, traceback tail and last log lines, culprits first."""
    summary = [f"{ref.where} failed: {event['reason']}: {event['message']}"]
    if event.get("jobset"):
        summary.append(f"JobSet status: {status.describe(event['jobset'])}")
    try:
        pods = hook.list_jobset_pods(ref.name, ref.namespace)
    except Exception as err:  # the failure still deserves its own error, not this one
        summary.append(f"Its pods could not be read: {explain(err)}")
        return JaxJobFailed("\n".join(summary))
    failed = status.failed_pods(pods)
    if not pods:
        summary.append("Its pods are gone, so no host's error can be shown.")
    elif not failed and event["reason"] != CANNOT_START:
        summary.append("No pod of its last attempt failed: the JobSet itself was stopped.")
    if rest := failed[MAX_FAILED_PODS:]:
        summary.append(
            f"Not shown: {len(rest)} more failed pods, " + " ".join(map(status.tag, rest))
        )
    return JaxJobFailed(
        "\n".join(summary), [_failure(hook, ref, p) for p in failed[:MAX_FAILED_PODS]]
    )


def _failure(hook: JobSetHook, ref: JobSetRef, pod: Mapping[str, Any]) -> ProcessFailure:
    ended = status.termination(pod) or {}
    message = ended.get("message")
    try:
        tail = hook.read_pod_log(
            pod["metadata"]["name"],
            ref.namespace,
            tail_lines=LOG_TAIL_LINES,
            limit_bytes=LOG_TAIL_BYTES,
        )
    except Exception as err:
        tail = f"(its log could not be read: {explain(err)})"
    failure = ProcessFailure.from_exit(status.tag(pod), message, ended.get("exitCode", 1), tail)
    if (body := parse_message(message)) is not None and not body["ok"]:
        return replace(failure, log_tail=tail)  # its own traceback, then what it printed last
    if (reason := ended.get("reason")) not in (None, "Error"):
        return replace(failure, error=f"{failure.error} ({reason})")  # e.g. OOMKilled
    return failure


def _finish(
    op: JaxJobOperator, hook: JobSetHook, ref: JobSetRef, *, succeeded: bool, ended: bool = True
) -> None:
    """Apply ``on_finish_action``. Once the JobSet has ended, a delete that fails leaves an
    object, not a workload: say so and keep the task's own outcome. Otherwise it raises."""
    action = op.on_finish_action
    if action == "keep_jobset" or (action == "delete_succeeded_jobset" and not succeeded):
        op.log.info("Keeping %s (on_finish_action=%s).", ref.where, action)
        return
    try:
        _delete(hook, ref, op.log)
    except Exception:
        if not ended:
            raise
        op.log.exception(
            "Could not delete the finished %s; remove it with: kubectl delete jobset -n %s %s",
            ref.where,
            ref.namespace,
            ref.name,
        )


def _delete(hook: JobSetHook, ref: JobSetRef, log: Any) -> None:
    if hook.delete_jobset(ref.name, ref.namespace, ref.uid):
        log.info("Deleted %s (Foreground: its pods go first).", ref.where)


def kill_on_kubernetes(op: JaxJobOperator, context: Context | None = None) -> None:
    """Delete the task's JobSet (Foreground): on kill, on a timeout while blocking, and when
    Airflow fails a deferred task itself (its own trigger timeout, a crashed trigger)."""
    ref: JobSetRef | None = getattr(op, "_jobset", None)
    if ref is None:
        if context is None:
            return
        cluster = cluster_of(op)
        ref = JobSetRef(cluster, op.jobset_name_for(context), op.namespace, None)
    _delete(ref.cluster.hook(), ref, op.log)
