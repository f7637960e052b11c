"""Why a JobSet failed, told as one :class:`JaxJobFailed`: its conditions and restarts, then
each failed host's ``[slice/host]``, traceback tail and last log lines, culprits first."""

from __future__ import annotations

from typing import Any

from airflow_provider_jax import jobset_status as status
from airflow_provider_jax.exceptions import JaxJobFailed, ProcessFailure
from airflow_provider_jax.hooks.jobset import JobSetHook, explain
from airflow_provider_jax.triggers.jobset_event import JobSetEvent
from airflow_provider_jax.triggers.pod_startup import REASON as CANNOT_START

MAX_FAILED_PODS = 4  # failed hosts shown in full in an error; the rest are counted
LOG_TAIL_LINES, LOG_TAIL_BYTES = 30, 8192


def explain_failure(
    hook: JobSetHook, name: str, namespace: str, event: JobSetEvent
) -> JaxJobFailed:
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
    return JaxJobFailed.of(
        "\n".join(summary), [_host_failure(hook, namespace, p) for p in failed[:MAX_FAILED_PODS]]
    )


def _host_failure(hook: JobSetHook, namespace: str, pod: dict[str, Any]) -> ProcessFailure:
    try:
        tail = hook.read_pod_log(
            pod["metadata"]["name"],
            namespace,
            tail_lines=LOG_TAIL_LINES,
            limit_bytes=LOG_TAIL_BYTES,
        )
    except Exception as err:
        tail = f"(its log could not be read: {explain(err)})"
    return status.pod_failure(pod, tail)
