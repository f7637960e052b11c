"""Notice that a JobSet's pods cannot start, instead of waiting on them until the timeout.

Kubernetes keeps a pod whose image cannot be pulled Pending for ever, holding its TPU or GPU
nodes. So while the JobSet has pods but is not ready, they are listed now and then (never once
all run; again after a restart), and the KubernetesPodOperator's own rules say which waiting
container is hopeless: an invalid or never-pullable image at once, a failed pull unless kubelet
says it was throttled or the registry was briefly down.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from airflow_provider_jax import jobset_status as status
from airflow_provider_jax.hooks.jobset import AsyncJobSetHook, explain, is_transient

CHECK_DELAYS = (5, 10, 20, 30)  # seconds between pod lists while not ready; then every 60 s
CHECK_EVERY = 60
REASON = "PodsCannotStart"


class PodsCannotStart(Exception):
    """A pod of the JobSet can never start as it is; the message says which and why."""


class PodStartup:
    """Watches one JobSet's pods until they run, and reports one that never will."""

    def __init__(
        self,
        hook: AsyncJobSetHook,
        name: str,
        namespace: str,
        *,
        on_stuck: Callable[[PodsCannotStart], None],
        log: logging.Logger | Any,
    ) -> None:
        self.hook, self.name, self.namespace = hook, name, namespace
        self.on_stuck, self.log = on_stuck, log
        self._task: asyncio.Task[None] | None = None

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
                problem = hopeless_pod(pods)
            except Exception as err:
                if is_transient(err):
                    continue
                # Only a convenience: the wait itself goes on regardless.
                self.log.warning("Stopped checking that the pods can start: %s", explain(err))
                return
            if problem is not None:
                self.on_stuck(PodsCannotStart(problem))
                return


def hopeless_pod(pods: list[Mapping[str, Any]]) -> str | None:
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
