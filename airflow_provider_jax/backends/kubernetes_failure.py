"""Why a JobSet failed, told as one :class:`JaxJobFailed`, cause first: the culprit's error, the
JobSet's conditions and restarts, each failed host's ``[slice/host]``, traceback tail and last
log lines, culprits first; and last the last lines of the hosts it does not show otherwise
(``host_logs.summary``): failed hosts past ``MAX_FAILED_PODS``, then the rest of the newest
attempt, up to ``SUMMARY_HOSTS`` hosts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.exceptions import JaxJobFailed
from airflow_provider_jax.hooks.api_errors import explain
from airflow_provider_jax.hooks.jobset import JobSetOperations
from airflow_provider_jax.manifest import status
from airflow_provider_jax.manifest.jobset_api import JOBSET_NAME_LABEL
from airflow_provider_jax.reporting import host_logs
from airflow_provider_jax.triggers.watch.events import JobSetEvent
from airflow_provider_jax.triggers.watch.pod_startup import REASON as CANNOT_START

MAX_FAILED_PODS = 4  # failed hosts shown in full in an error; the rest are counted
LOG_TAIL_LINES, LOG_TAIL_BYTES = 30, 8192


def explain_failure(
    hook: JobSetOperations, name: str, namespace: str, event: JobSetEvent
) -> JaxJobFailed:
    """The error for a failed JobSet, the other hosts' last lines at its end."""
    summary = [f"{event.where} failed: {event.reason}: {event.message}"]
    if event.jobset:
        summary.append(f"JobSet status: {status.describe(event.jobset)}")
    summary.extend(f"  {line}" for line in event.restarts)
    try:
        pods = hook.list_jobset_pods(name, namespace)
    except Exception as err:  # the failure still deserves its own error, not this one
        summary.append(f"Its pods could not be read: {explain(err)}")
        return JaxJobFailed("\n".join(summary))
    failed = status.failed_pods(pods)
    if not pods:
        summary.append("Its pods are gone, so no host's error can be shown.")
    elif not failed and event.reason != CANNOT_START:
        summary.append("No pod of its last attempt failed: the JobSet itself was stopped.")
    if rest := failed[MAX_FAILED_PODS:]:
        summary.append(
            f"Not shown: {len(rest)} more failed pods, " + " ".join(map(status.tag, rest))
        )
    tails = {_name(p): _tail(hook, namespace, p, LOG_TAIL_LINES) for p in failed[:MAX_FAILED_PODS]}
    shown = [status.pod_failure(p, tails[_name(p)]) for p in failed[:MAX_FAILED_PODS]]
    others = _host_summary(hook, name, namespace, pods, failed, tails) if pods else []
    return JaxJobFailed.of("\n".join(summary), shown, others)


def _host_summary(
    hook: JobSetOperations,
    name: str,
    namespace: str,
    pods: list[dict[str, Any]],
    failed: list[Mapping[str, Any]],
    tails: dict[str, str],
) -> list[str]:
    """One tail request per shown host; the hosts the error shows in full are left out."""
    failed_names = [_name(p) for p in failed]
    rest = [p for p in status.latest_attempt(pods) if _name(p) not in failed_names]
    hosts = [*failed[MAX_FAILED_PODS:], *rest]
    shown = hosts[: host_logs.SUMMARY_HOSTS]
    for pod in shown:
        if _name(pod) not in tails:
            tails[_name(pod)] = _tail(hook, namespace, pod, host_logs.SUMMARY_LINES)
    lines = [(status.tag(pod), tails[_name(pod)].splitlines()) for pod in shown]
    where = f": kubectl logs -n {namespace} -l {JOBSET_NAME_LABEL}={name}"
    return host_logs.summary(lines, hidden=len(hosts) - len(shown), more_at=where)


def _name(pod: Mapping[str, Any]) -> str:
    return pod["metadata"]["name"]


def _tail(hook: JobSetOperations, namespace: str, pod: Mapping[str, Any], lines: int) -> str:
    try:
        return hook.read_pod_log(
            _name(pod), namespace, tail_lines=lines, limit_bytes=LOG_TAIL_BYTES
        )
    except Exception as err:
        return f"(its log could not be read: {explain(err)})"
