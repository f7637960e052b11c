"""Notice that a JobSet's pods cannot start, instead of waiting on them until the timeout.

Kubernetes keeps a pod whose image cannot be pulled Pending for ever, holding its TPU or GPU
nodes. So while the JobSet has pods but is not ready, they are listed now and then (never once
all run; again after a restart), and the KubernetesPodOperator's own rules say which waiting
container is hopeless: an invalid or never-pullable image at once, a failed pull unless kubelet
says it was throttled or the registry was briefly down.

A pod no node can hold is only hopeless once the cluster autoscaler says so. kube-scheduler
marks it ``Unschedulable`` even while a node pool scales up from zero, so that alone proves
nothing; the autoscaler's ``NotTriggerScaleUp`` event on the pod ("pod didn't trigger
scale-up: ...") says no node group could hold it. Its reasons that a wait can cure (a full
node group, a stockout backoff, a quota) are waited out; the rest (no pool with the job's
labels, fewer chips per node than each pod asks for, an untolerated taint) fail the task with
the scheduler's message and the likely fix. Reading Events is optional: without it, such a
pod waits for the task's timeouts.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from airflow_provider_jax.hooks.api_errors import api_status, explain, is_transient
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.manifest import status

CHECK_DELAYS = (5, 10, 20, 30)  # seconds between pod lists while not ready; then every 60 s
CHECK_EVERY = 60
REASON = "PodsCannotStart"
SCALE_UP_DECLINED = "NotTriggerScaleUp"  # cluster-autoscaler's event on a pod it cannot help
# Autoscaler reasons a wait can cure: other jobs free a full node group, a stockout's backoff
# ends, a quota is raised.
WAITABLE = ("max node group size reached", "max cluster", "limit reached", "backoff", "quota")


class PodsCannotStart(Exception):
    """A pod of the JobSet can never start as it is; the message says which and why."""


class PodStartup:
    """Watches one JobSet's pods until they run, and reports one that never will."""

    def __init__(
        self,
        hook: AsyncJobSetOperations,
        name: str,
        namespace: str,
        *,
        on_stuck: Callable[[PodsCannotStart], None],
        log: logging.Logger | Any,
        on_waiting: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.hook, self.name, self.namespace = hook, name, namespace
        self.on_stuck, self.log, self.on_waiting = on_stuck, log, on_waiting
        self._task: asyncio.Task[None] | None = None
        self._read_events = True  # until RBAC says no

    def update(self, jobset: Mapping[str, Any]) -> None:
        """Hear of a JobSet change: check its pods while it has some that are not ready."""
        waiting = status.has_started(jobset) and not status.all_ready(jobset)
        if waiting and status.terminal_state(jobset) is None:
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._run(), name=f"pod-startup-{self.name}")
        elif self._task is not None:
            self._task.cancel()
            self._task = None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        for delay in itertools.chain(CHECK_DELAYS, itertools.repeat(CHECK_EVERY)):
            await asyncio.sleep(delay)
            try:
                pods = await self.hook.list_jobset_pods(self.name, self.namespace)
                problem = hopeless_pod(pods) or await self._unschedulable(pods)
            except Exception as err:
                if is_transient(err):
                    continue
                # Only a convenience: the wait itself goes on regardless.
                self.log.warning("Stopped checking that the pods can start: %s", explain(err))
                return
            if problem is not None:
                self.on_stuck(PodsCannotStart(problem))
                return

    async def _unschedulable(self, pods: Sequence[Mapping[str, Any]]) -> str | None:
        """Why a pod no node can hold never will be, by the autoscaler's word, or None."""
        waiting = [p for p in status.latest_attempt(pods) if _unschedulable_condition(p)]
        if waiting:
            pod, why = waiting[0], _unschedulable_condition(waiting[0]) or {}
            name, tag = pod["metadata"]["name"], status.tag(pod)
            self.on_waiting(f"pod {name} {tag} unschedulable: {why.get('message', '')}")
        if not waiting or not self._read_events:
            return None
        try:
            events = await self.hook.list_events(self.namespace, SCALE_UP_DECLINED)
        except Exception as err:
            if api_status(err) != 403:
                raise
            self._read_events = False
            self.log.warning(
                "Pods wait unschedulable, and the autoscaler's verdict cannot be read (%s): "
                "a pod no node can hold waits for the task's timeouts",
                explain(err),
            )
            return None
        declined = {
            e["involvedObject"]["name"]: e.get("message") or ""
            for e in sorted(events, key=lambda e: e.get("lastTimestamp") or "")
        }
        for pod in waiting:
            verdict = declined.get(pod["metadata"]["name"])
            if verdict is not None and not any(w in verdict for w in WAITABLE):
                return unschedulable_problem(pod, verdict)
        return None


def hopeless_pod(pods: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the first pod of the latest attempt that can never start cannot, or None."""
    from airflow.providers.cncf.kubernetes.utils.pod_manager import (
        detect_pod_terminate_early_issues,
    )

    for pod in status.latest_attempt(pods):
        if (pod.get("status") or {}).get("phase") != "Pending":
            continue
        if issue := detect_pod_terminate_early_issues(_v1_pod(pod)):
            return f"pod {pod['metadata']['name']} {status.tag(pod)} cannot start: {issue}"
    return None


def _unschedulable_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return status.condition(pod, "PodScheduled", reason="Unschedulable")


def unschedulable_problem(pod: Mapping[str, Any], verdict: str) -> str:
    """The task's error for a pod no node can hold: the scheduler, the autoscaler, a fix."""
    scheduler = (_unschedulable_condition(pod) or {}).get("message", "")
    return (
        f"pod {pod['metadata']['name']} {status.tag(pod)} cannot be scheduled: {scheduler} "
        f"The cluster autoscaler will not add a node for it ({verdict}). "
        f"{likely_fix(pod, f'{scheduler} {verdict}')}"
    )


def likely_fix(pod: Mapping[str, Any], reasons: str) -> str:
    spec = pod.get("spec") or {}
    if "didn't match Pod's node affinity/selector" in reasons:
        labels = ", ".join(f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items())
        return (
            f"No node pool carries the labels this job selects ({labels}): create a node pool "
            "with that accelerator, machine type and topology (docs/gke-prerequisites.md), or "
            "ask for the accelerator a pool has."
        )
    if insufficient := re.search(r"Insufficient ([\w./-]+)", reasons):
        resource = insufficient[1].rstrip(".")
        asked = sum(
            int(((c.get("resources") or {}).get("limits") or {}).get(resource, 0))
            for c in spec.get("containers") or ()
        )
        return (
            f"Each pod asks for {asked} {resource}, more than a node of any pool has: check "
            "chips_per_host / gpus_per_node against the node pool's machine type."
        )
    if "taint" in reasons:
        return "The nodes that match carry a taint the job does not tolerate: add a toleration."
    return "Compare the job's node selector and requests with the cluster's node pools."


def _v1_pod(pod: Mapping[str, Any]) -> Any:
    """The pod's status as the ``V1Pod`` that the cncf provider's check reads."""
    from kubernetes.client import V1Pod

    body = _Response(pod.get("status") or {})
    return V1Pod(status=_deserializer().deserialize(body, "V1PodStatus"))


class _Response:
    def __init__(self, body: Mapping[str, Any]) -> None:
        self.data = json.dumps(body)


@cache
def _deserializer() -> Any:
    from kubernetes.client import ApiClient

    return ApiClient()
