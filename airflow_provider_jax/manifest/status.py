"""Read what a JobSet and its pods say about a run. Pure: raw API dicts in, plain values out.

Shared by the trigger (is it over?), the operator (whose result, which host failed) and the
test cluster, so every part agrees on what "finished", "leader" and "failed pod" mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from airflow_provider_jax.manifest.capacity_choices import SELECTOR_KEYS, capacity_of_selector
from airflow_provider_jax.manifest.failure_policy import DISRUPTION_TARGET
from airflow_provider_jax.manifest.in_place_restart import JOBSET_STRATEGY as IN_PLACE_STRATEGY
from airflow_provider_jax.manifest.jobset_api import (
    COMPLETION_INDEX_ANNOTATION,
    IN_PLACE_ATTEMPT_ANNOTATION,
    JOB_INDEX_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT_LABEL,
    RESTARTING_ALL_CONTAINERS,
)
from airflow_provider_jax.manifest.pathways import HEAD
from airflow_provider_jax.manifest.provider_keys import (
    CONTAINER_NAME,
    IDENTITY_LABELS,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    TRY_NUMBER_LABEL,
)
from airflow_provider_jax.reporting.failures import ProcessFailure, culprit_rank
from airflow_provider_jax.runtime.exits import DISRUPTION
from airflow_provider_jax.runtime.messages import host_tag

COMPLETED, FAILED = "Completed", "Failed"


def terminal_state(jobset: Mapping[str, Any]) -> str | None:
    """``"Completed"`` or ``"Failed"`` once the JobSet has finished, else None."""
    status = jobset.get("status") or {}
    if status.get("terminalState") in (COMPLETED, FAILED):
        return status["terminalState"]
    for condition in status.get("conditions") or ():
        if condition.get("type") in (COMPLETED, FAILED) and condition.get("status") == "True":
            return condition["type"]
    return None


def is_deleting(jobset: Mapping[str, Any]) -> bool:
    return bool((jobset.get("metadata") or {}).get("deletionTimestamp"))


def is_suspended(jobset: Mapping[str, Any]) -> bool:
    """Suspended: created so for Kueue, or Kueue evicted it; its Jobs have no pods."""
    return bool((jobset.get("spec") or {}).get("suspend"))


def uid(obj: Mapping[str, Any] | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("uid")


def restarts(jobset: Mapping[str, Any]) -> int:
    """How often the JobSet has restarted, recreated or in place: its current attempt's
    number. JobSet counts only recreations in ``status.restarts``."""
    return int((jobset.get("status") or {}).get("restarts") or 0) + in_place_restarts(jobset)


def in_place_restarts(jobset: Mapping[str, Any]) -> int:
    """In-place restarts begun: JobSet sets ``previousInPlaceRestartAttempt`` as one begins
    (the failed pod's agent is one attempt ahead) and ``currentInPlaceRestartAttempt`` once
    every pod has reached it; the first start is attempt 0."""
    status = jobset.get("status") or {}
    previous = status.get("previousInPlaceRestartAttempt")
    begun = int(previous) + 1 if previous is not None else 0
    return max(int(status.get("currentInPlaceRestartAttempt") or 0), begun)


def restarts_in_place(jobset: Mapping[str, Any]) -> bool:
    policy = (jobset.get("spec") or {}).get("failurePolicy") or {}
    return policy.get("restartStrategy") == IN_PLACE_STRATEGY


def summary(jobset: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a JobSet's status worth carrying in a trigger event or an error."""
    status = jobset.get("status") or {}
    return {
        "terminalState": status.get("terminalState"),
        "restarts": status.get("restarts", 0),
        "maxRestarts": ((jobset.get("spec") or {}).get("failurePolicy") or {}).get(
            "maxRestarts", 0
        ),
        "conditions": [
            {k: c[k] for k in ("type", "status", "reason", "message") if c.get(k) is not None}
            for c in status.get("conditions") or ()
        ],
    }


def describe(info: Mapping[str, Any]) -> str:
    """One line from :func:`summary`: conditions, then restarts used of those allowed."""
    conditions = "; ".join(
        f"{c['type']}={c.get('status')}"
        + (f" ({c['reason']}: {c['message']})" if c.get("reason") else "")
        for c in info.get("conditions") or ()
    )
    restarts = f"restarts {info.get('restarts', 0)}/{info.get('maxRestarts', 0)}"
    return f"{conditions or 'no conditions'}; {restarts}"


def has_started(jobset: Mapping[str, Any]) -> bool:
    """Whether any child Job has pods running or done: the moment a leader's log can exist."""
    return _some_job(jobset, ("active", "ready", "succeeded", "failed"))


def has_run(jobset: Mapping[str, Any]) -> bool:
    """Whether some child Job has had all its pods running (ready, or done): until then a
    started JobSet's pods are usually still being scheduled or pulling images."""
    return _some_job(jobset, ("ready", "succeeded", "failed"))


def _some_job(jobset: Mapping[str, Any], counts: tuple[str, ...]) -> bool:
    """Whether any replicated job's status counts a child Job under one of ``counts``."""
    rjobs = (jobset.get("status") or {}).get("replicatedJobsStatus") or ()
    return any(rjob.get(k) for rjob in rjobs for k in counts)


def all_ready(jobset: Mapping[str, Any]) -> bool:
    """Whether every child Job of every replicated job has all its pods running and ready."""
    wanted = {
        rjob.get("name"): rjob.get("replicas", 1)
        for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or ()
    }
    ready = {
        rjob.get("name"): rjob.get("ready", 0)
        for rjob in (jobset.get("status") or {}).get("replicatedJobsStatus") or ()
    }
    return bool(wanted) and all(ready.get(name, 0) >= n for name, n in wanted.items())


def owned_by(jobset: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``jobset`` was made by this provider for the task instance ``labels`` name."""
    have = (jobset.get("metadata") or {}).get("labels") or {}
    return have.get(MANAGED_BY_LABEL) == MANAGED_BY and all(
        have.get(k) == labels.get(k) for k in IDENTITY_LABELS
    )


def same_try(jobset: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``jobset`` was made by the very try that ``labels`` describe."""
    have = (jobset.get("metadata") or {}).get("labels") or {}
    return have.get(TRY_NUMBER_LABEL) == labels.get(TRY_NUMBER_LABEL)


def as_read(jobset: Mapping[str, Any]) -> dict[str, Any]:
    """What of a JobSet this module's readers and :func:`~airflow_provider_jax.reporting.goodput.chips`
    look at: its metadata less ``managedFields``, status, ``suspend``, ``failurePolicy``, and
    of each replicated job its name, replicas, parallelism and containers' limits.

    A triggerer caches every JobSet it watches; the rest (pod templates, podFailurePolicy's
    exit-code lists, managed fields) is most of one, and at a thousand jobs each object kept
    adds to every full garbage collection."""
    spec = jobset.get("spec") or {}
    kept: dict[str, Any] = {k: spec[k] for k in ("suspend", "failurePolicy") if k in spec}
    if "replicatedJobs" in spec:
        kept["replicatedJobs"] = [_rjob_as_read(rjob) for rjob in spec["replicatedJobs"] or ()]
    read = {k: v for k, v in jobset.items() if k not in ("metadata", "spec")}
    if "metadata" in jobset:
        read["metadata"] = {
            k: v for k, v in (jobset["metadata"] or {}).items() if k != "managedFields"
        }
    return {**read, "spec": kept}


def _rjob_as_read(rjob: Mapping[str, Any]) -> dict[str, Any]:
    job = (rjob.get("template") or {}).get("spec") or {}
    pod = (job.get("template") or {}).get("spec") or {}
    containers = [
        {"resources": {"limits": (c.get("resources") or {}).get("limits") or {}}}
        for c in pod.get("containers") or ()
    ]
    pod_kept: dict[str, Any] = {"containers": containers}
    if selector := {k: v for k, v in (pod.get("nodeSelector") or {}).items() if k in SELECTOR_KEYS}:
        pod_kept["nodeSelector"] = selector  # the capacity it runs on (Kueue's flavor's labels)
    job_kept: dict[str, Any] = {"template": {"spec": pod_kept}}
    if "parallelism" in job:
        job_kept["parallelism"] = job["parallelism"]
    kept = {k: rjob[k] for k in ("name", "replicas") if k in rjob}
    return {**kept, "template": {"spec": job_kept}}


def running_capacity(jobset: Mapping[str, Any]) -> str | None:
    """The capacity an unsuspended JobSet's accelerator pods select (with Kueue, the labels of
    the flavor that admitted it); None while it is suspended."""
    rjobs = (jobset.get("spec") or {}).get("replicatedJobs") or ()
    if is_suspended(jobset) or not rjobs:
        return None
    pod = ((rjobs[-1].get("template") or {}).get("spec") or {}).get("template") or {}
    return capacity_of_selector((pod.get("spec") or {}).get("nodeSelector") or {})


def _meta(pod: Mapping[str, Any], kind: str) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get(kind) or {}


def _int(value: str | None, default: int = 0) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def restart_attempt(pod: Mapping[str, Any]) -> int:
    """The attempt a pod belongs to: JobSet's recreations (its label) plus the in-place
    restarts its agent has reached (its annotation), as :func:`restarts` counts them."""
    recreated = _int(_meta(pod, "labels").get(RESTART_ATTEMPT_LABEL))
    return recreated + _int(_meta(pod, "annotations").get(IN_PLACE_ATTEMPT_ANNOTATION))


def position(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(slice, host) of a pod: its Job's index in the replicated job and its completion index."""
    # Kubernetes 1.28+ also sets a label of the same name; older clusters only the annotation.
    host = _meta(pod, "annotations").get(COMPLETION_INDEX_ANNOTATION)
    if host is None:
        host = _meta(pod, "labels").get(COMPLETION_INDEX_ANNOTATION)
    return _int(_meta(pod, "labels").get(JOB_INDEX_LABEL)), _int(host)


def tag(pod: Mapping[str, Any]) -> str:
    """``[slice/host]``, as the local backend names processes."""
    return host_tag(*position(pod))


def latest_attempt(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods of the newest restart attempt, slice-major."""
    pods = list(pods)
    if not pods:
        return []
    newest = max(restart_attempt(p) for p in pods)
    return sorted((p for p in pods if restart_attempt(p) == newest), key=position)


def leader_pod(pods: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Process 0: job-index 0, completion index 0, of the latest restart attempt; under
    Pathways, the head (its workers run no program of ours)."""
    current = latest_attempt(pods)
    heads = [p for p in current if _meta(p, "labels").get(REPLICATED_JOB_LABEL) == HEAD]
    return next((p for p in heads or current if position(p) == (0, 0)), None)


def container_status(
    pod: Mapping[str, Any], container: str = CONTAINER_NAME
) -> Mapping[str, Any] | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return next((s for s in statuses if s.get("name") == container), None)


def termination(
    pod: Mapping[str, Any], container: str = CONTAINER_NAME
) -> Mapping[str, Any] | None:
    """The container's ``terminated`` state (exitCode, reason, message), if it has ended."""
    status = container_status(pod, container) or {}
    return (status.get("state") or {}).get("terminated") or (status.get("lastState") or {}).get(
        "terminated"
    )


def termination_message(pod: Mapping[str, Any], container: str = CONTAINER_NAME) -> str | None:
    return (termination(pod, container) or {}).get("message")


def has_failed(pod: Mapping[str, Any]) -> bool:
    ended = termination(pod)
    if ended is not None:
        return ended.get("exitCode", 0) != 0
    return (pod.get("status") or {}).get("phase") == "Failed"


def failed_pods(
    pods: Iterable[Mapping[str, Any]], attempt: int | None = None
) -> list[Mapping[str, Any]]:
    """Failed pods of the latest attempt (or of ``attempt``), culprits first
    (:func:`~airflow_provider_jax.exceptions.culprit_rank`), then by when each ended
    (``finishedAt`` has whole seconds, so ties are common)."""

    def order(pod: Mapping[str, Any]) -> tuple[int, str, tuple[int, int]]:
        ended = termination(pod) or {}
        return (culprit_rank(pod_failure(pod)), ended.get("finishedAt") or "~", position(pod))

    pods = list(pods)
    chosen = (
        latest_attempt(pods)
        if attempt is None
        else [p for p in pods if restart_attempt(p) == attempt]
    )
    return sorted((p for p in chosen if has_failed(p)), key=order)


def restarted_in_place(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods whose program ended on its own, culprits first as in :func:`failed_pods`,
    under ``InPlaceRestart``: a container restarted in place (its ``lastState``), or a pod that
    failed and is replaced alone (a lost node). Containers the kubelet stopped so that their
    pod restarts (``RestartingAllContainers``) are not causes."""

    def ended(pod: Mapping[str, Any]) -> Mapping[str, Any]:
        return termination(pod) or {}

    def order(pod: Mapping[str, Any]) -> tuple[int, str, tuple[int, int]]:
        return (culprit_rank(pod_failure(pod)), ended(pod).get("finishedAt") or "~", position(pod))

    causes = [
        p
        for p in pods
        if ended(p).get("exitCode", 0) != 0 and ended(p).get("reason") != RESTARTING_ALL_CONTAINERS
    ]
    return sorted(causes, key=order)


def pod_failure(pod: Mapping[str, Any], log_tail: str = "") -> ProcessFailure:
    """How one failed pod failed, told as the local backend tells a process: its runtime's
    error and traceback, else its exit code with kubelet's reason (``OOMKilled``); then
    ``log_tail``. A disrupted pod is a disruption, whatever it exited with, as its Job's pod
    failure policy counts it."""
    ended = termination(pod) or {}
    failure = ProcessFailure.from_exit(
        tag(pod), ended.get("message"), ended.get("exitCode", 1), log_tail
    )
    if failure.reported:
        failure = replace(failure, log_tail=log_tail)  # its traceback, then what it printed last
    elif (reason := ended.get("reason")) not in (None, "Error"):
        failure = replace(failure, error=f"{failure.error} ({reason})")
    if (disrupted := disruption(pod)) is not None:
        why = disrupted.get("reason") or "DisruptionTarget"
        failure = replace(failure, kind=DISRUPTION, disrupted=True, error=f"{why}, {failure.error}")
    return failure


def disruption(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's ``DisruptionTarget`` condition (preemption, eviction, a drained node)."""
    return condition(pod, DISRUPTION_TARGET, status="True")


def condition(obj: Mapping[str, Any], kind: str, **fields: str) -> Mapping[str, Any] | None:
    """The condition of type ``kind`` (of a pod, a Workload) whose ``fields`` (status,
    reason) match."""
    for found in (obj.get("status") or {}).get("conditions") or ():
        if found.get("type") == kind and all(found.get(k) == v for k, v in fields.items()):
            return found
    return None
