"""``JobSetTrigger``: wait in the triggerer until a JobSet has finished, then fire once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from airflow import __version__ as airflow_version
from airflow.triggers.base import BaseTrigger, TriggerEvent
from packaging.version import Version

from airflow_provider_jax import jobset_status as status
from airflow_provider_jax.cluster import KubernetesCluster
from airflow_provider_jax.hooks.api_errors import api_status, explain
from airflow_provider_jax.host_logs import STREAM_LEADER, STREAM_NONE
from airflow_provider_jax.triggers.informer import (
    ABSENT,
    ApiUnavailable,
    Change,
    subscribe,
    with_retries,
)
from airflow_provider_jax.triggers.jobset_event import (
    ERROR,
    FAILED,
    SUCCESS,
    TIMEOUT,
    JobSetEvent,
)
from airflow_provider_jax.triggers.pod_logs import PodLogs
from airflow_provider_jax.triggers.pod_startup import REASON as CANNOT_START
from airflow_provider_jax.triggers.pod_startup import PodsCannotStart, PodStartup
from airflow_provider_jax.triggers.queue_wait import QueueFailed, QueueWait
from airflow_provider_jax.triggers.restarts import RestartLog
from airflow_provider_jax.triggers.run_clock import RunClock
from airflow_provider_jax.triggers.task_state import in_background, task_left_deferred, warm_up

__all__ = ["ERROR", "FAILED", "SUCCESS", "TIMEOUT", "JobSetTrigger"]
LOG_GRACE = 5.0  # seconds to show the end of the finished pods' logs before firing
# From 3.3 the triggerer calls on_kill() for user actions (and, wrongly, when a trigger moves to
# another triggerer: see on_kill); before, cleanup() must ask.
_TRIGGER_ON_KILL = Version(Version(airflow_version).base_version) >= Version("3.3.0")


class JobSetTrigger(BaseTrigger):
    """Fire exactly one event when JobSet ``name`` (with ``uid``) completes, fails, vanishes,
    or runs past ``deadline`` (epoch seconds: the task's ``execution_timeout``).

    Holds plain data only, including the cluster (:class:`KubernetesCluster` as a dict: a
    connection id, or a GKE endpoint and Google connection), and has no side effect while it
    waits, so running it twice is harmless. Past ``deadline`` it deletes the JobSet (by uid,
    so never a successor) before firing: the slice stops at once. Waiting costs almost
    nothing: the JobSet is watched through the informer shared by every trigger on that
    (cluster, namespace). The leader's (``stream_logs="leader"``) or every host's
    (``"all"``) log lines go to the task log, at most ``log_lines`` per host, and the
    leader's progress reports, at most ``log_lines`` of them. A pod that can never start
    (its image cannot be pulled) ends the wait at once. While it waits for capacity, each
    change in why (Kueue's verdict, its queue position, unschedulable pods) is logged; past
    ``queue_timeout`` seconds from its creation without all pods running
    (``queue_until="running"``) or Kueue's admission (``"admitted"``), or when Kueue gives
    up on it, the JobSet is deleted and the task fails.

    The event is a :class:`~airflow_provider_jax.triggers.jobset_event.JobSetEvent` as a dict.
    """

    def __init__(
        self,
        *,
        name: str,
        namespace: str,
        uid: str,
        cluster: dict[str, Any],
        deadline: float | None = None,
        poll_interval: float = 10.0,
        retry_budget: float = 600.0,
        log_lines: int = 1000,
        queue_timeout: float | None = None,
        queue_until: str = "running",
        stream_logs: str = STREAM_LEADER,
    ) -> None:
        super().__init__()
        self.name, self.namespace, self.uid = name, namespace, uid
        self.cluster = dict(cluster)
        self.deadline = deadline
        self.poll_interval = poll_interval
        self.retry_budget = retry_budget
        self.log_lines = log_lines
        self.queue_timeout, self.queue_until = queue_timeout, queue_until
        self.stream_logs = stream_logs
        self._fired = False
        self._clock = RunClock()  # in memory only: the goodput ledger of what this run sees
        self._restart_lines: list[str] = []

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
                "cluster": self.cluster,
                "deadline": self.deadline,
                "poll_interval": self.poll_interval,
                "retry_budget": self.retry_budget,
                "log_lines": self.log_lines,
                # Only when used: a row without them is one the previous release can load.
                **(
                    {"queue_timeout": self.queue_timeout, "queue_until": self.queue_until}
                    if self.queue_timeout is not None
                    else {}
                ),
                **({"stream_logs": self.stream_logs} if self.stream_logs != STREAM_LEADER else {}),
            },
        )

    @property
    def kubernetes(self) -> KubernetesCluster:
        return KubernetesCluster.from_dict(self.cluster)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        if _TRIGGER_ON_KILL:
            warm_up(getattr(self, "task_instance", None))  # for on_kill's state read
        event = await self.wait()
        self._fired = True
        yield TriggerEvent(event.to_dict())

    async def wait(self, connection_extras: dict[str, Any] | None = None) -> JobSetEvent:
        """The event this trigger fires; the operator's blocking mode awaits it directly.
        It carries the restarts seen and the goodput ledger (the leader's last lines in)."""
        event = await self._wait(connection_extras)
        return replace(event, restarts=list(self._restart_lines), goodput=self._clock.ledger())

    async def _wait(self, connection_extras: dict[str, Any] | None) -> JobSetEvent:
        limit = asyncio.timeout(None if self.deadline is None else self.deadline - time.time())
        try:
            async with limit:
                return await self._watch(connection_extras)
        except TimeoutError:
            if not limit.expired():
                raise
            # Stop the slice now, not once a worker has picked the task up again.
            await self._delete(connection_extras)
            return self._event(TIMEOUT, "ExecutionTimeout", "the task's execution_timeout passed")
        except PodsCannotStart as err:
            return self._event(FAILED, CANNOT_START, str(err))
        except QueueFailed as err:
            await self._delete(connection_extras)  # queued, it holds quota; admitted, nodes
            return self._event(FAILED, err.reason, str(err))
        except ApiUnavailable as err:
            return self._event(ERROR, "ApiUnavailable", str(err))
        except Exception as err:
            if api_status(err) is None:
                raise
            # Not transient (401, 403, ...): waiting longer will not help.
            return self._event(ERROR, "ApiError", f"Kubernetes API refused a call: {explain(err)}")

    async def _watch(self, connection_extras: dict[str, Any] | None) -> JobSetEvent:
        async with subscribe(
            self.kubernetes,
            self.namespace,
            self.name,
            poll_interval=self.poll_interval,
            retry_budget=self.retry_budget,
            connection_extras=connection_extras,
        ) as changes:
            # A thousand triggers starting at once must not each load a kubeconfig.
            hook = changes.hook
            pod_logs = (
                PodLogs(
                    hook,
                    self.name,
                    self.namespace,
                    hosts=self.stream_logs,
                    max_lines=self.log_lines,
                    log=self.log,
                    on_line=self._clock.leader_line,
                )
                if self.log_lines > 0 and self.stream_logs != STREAM_NONE
                else None
            )
            queue = QueueWait(
                self.kubernetes,
                hook,
                self.name,
                self.namespace,
                timeout=self.queue_timeout,
                until=self.queue_until,
                on_fail=changes.put,
                log=self.log,
                retry_budget=self.retry_budget,
                connection_extras=connection_extras,
            )
            startup = PodStartup(
                hook,
                self.name,
                self.namespace,
                on_stuck=changes.put,
                log=self.log,
                on_waiting=queue.pods_waiting,
            )
            restarts = RestartLog(hook, self.name, self.namespace, self.log)
            self._restart_lines = restarts.lines
            try:
                while True:
                    change = await changes.next()
                    if change.type == ABSENT or status.uid(change.obj) != self.uid:
                        # Not news about our JobSet (a lagging watch, a predecessor's
                        # DELETED): ask the API server itself.
                        fresh = await with_retries(
                            lambda: hook.get_jobset(self.name, self.namespace), self.retry_budget
                        )
                        change = Change("GET", fresh)
                    if change.obj is not None:
                        for attempt, culprit in await restarts.update(change.obj):
                            self._clock.restarted(attempt, culprit.kind if culprit else None)
                        self._clock.seen(change.obj)  # after: the old attempt ends first
                        startup.update(change.obj)
                        queue.update(change.obj)
                        if pod_logs is not None:
                            pod_logs.update(change.obj)
                    if (event := self._verdict(change)) is not None:
                        if pod_logs is not None:
                            await pod_logs.stop(grace=LOG_GRACE)
                        return event
            finally:
                await queue.stop()
                await startup.stop()
                if pod_logs is not None:
                    await pod_logs.stop()

    def _verdict(self, change: Change) -> JobSetEvent | None:
        jobset = change.obj
        where = f"JobSet {self.namespace}/{self.name}"
        if jobset is None or status.uid(jobset) != self.uid:
            return self._event(FAILED, "Deleted", f"{where} no longer exists; was it deleted?")
        info = status.summary(jobset)
        state = status.terminal_state(jobset)
        if state == status.COMPLETED:
            return self._event(SUCCESS, "Completed", f"{where} completed", info)
        if state == status.FAILED:
            failed = next((c for c in info["conditions"] if c["type"] == status.FAILED), {})
            reason = failed.get("reason", "Failed")
            return self._event(FAILED, reason, failed.get("message", f"{where} failed"), info)
        if change.type == "DELETED" or status.is_deleting(jobset):
            return self._event(FAILED, "Deleted", f"{where} was deleted before it finished", info)
        return None

    def _event(
        self, outcome: str, reason: str, message: str, jobset: dict[str, Any] | None = None
    ) -> JobSetEvent:
        self._clock.finish(None if outcome == SUCCESS else reason)
        return JobSetEvent(outcome, self.name, self.namespace, self.uid, reason, message, jobset)

    async def on_kill(self) -> None:
        """The task was killed, cleared or marked failed/success while deferred (3.3+), or
        another triggerer took this trigger over (see ``task_state``): the task's state
        decides. If it cannot be read, Airflow's word stands and the JobSet goes."""
        await asyncio.shield(in_background(self._delete_once_the_task_left(keep_if_unknown=False)))

    async def cleanup(self) -> None:
        """Before Airflow 3.3 this is the only hook on a user kill, so delete only once the
        task has left DEFERRED; a triggerer restart (still DEFERRED) must not delete."""
        if _TRIGGER_ON_KILL or self._fired:
            return
        await self._delete_once_the_task_left(keep_if_unknown=True)

    async def _delete_once_the_task_left(self, *, keep_if_unknown: bool) -> None:
        try:
            left = await self.safe_to_cancel()
        except Exception:
            verdict = "keeping" if keep_if_unknown else "deleting"
            self.log.warning(
                "Could not read the task's state; %s the JobSet", verdict, exc_info=True
            )
            left = not keep_if_unknown
        if left:
            await self._delete()
        else:
            self.log.info(
                "The task still waits on JobSet %s/%s: another triggerer took this trigger "
                "over; keeping it",
                self.namespace,
                self.name,
            )

    async def safe_to_cancel(self) -> bool:
        """Whether the task has stopped waiting on this trigger (so the JobSet must go)."""
        return await task_left_deferred(self.task_instance)

    async def _delete(self, connection_extras: dict[str, Any] | None = None) -> None:
        self.log.info("Deleting JobSet %s/%s (Foreground)", self.namespace, self.name)
        hook = self.kubernetes.async_hook(connection_extras)
        try:
            await hook.delete_jobset(self.name, self.namespace, self.uid)
        except Exception:
            self.log.exception("Could not delete JobSet %s/%s", self.namespace, self.name)
