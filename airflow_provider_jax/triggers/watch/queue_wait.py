"""Why a JobSet waits, in the task log, and how long it may: Kueue's verdict, its queue
position, the pods' scheduling, and ``queue_timeout``.

While the JobSet is suspended or its pods are not all running, each *change* in why it waits
is one log line: Kueue's own message on its ``Workload`` (quota not reserved: "couldn't assign
flavors to pod set workers: insufficient unused quota for google.com/tpu in flavor v6e, 64
more needed"), its admission checks (a ProvisioningRequest's Pending / Retry / Ready), its
position in the LocalQueue, or, once admitted or without Kueue, why its pods are not
scheduled. Workloads come from one shared list+watch per namespace (``informer.py``) and
positions from one poll per queue (``queue_position.py``), so a thousand waiting jobs cost a
few requests a minute in all.

The wait ends the task, with the JobSet deleted, when Kueue gives up on it (an admission check
``Rejected``, the Workload deactivated), when Kueue has preempted it more often than
``max_restarts`` allows, or when ``queue_timeout`` passes first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.hooks.resources import WORKLOADS
from airflow_provider_jax.manifest import status
from airflow_provider_jax.manifest.kueue_keys import KUEUE_QUEUE_LABEL
from airflow_provider_jax.manifest.provider_keys import capacity_wait
from airflow_provider_jax.reporting.goodput import epoch
from airflow_provider_jax.triggers.watch.informer import subscribe
from airflow_provider_jax.triggers.watch.pod_startup import PodsCannotStart
from airflow_provider_jax.triggers.watch.queue_position import follow_position

QUEUE_TIMEOUT, REJECTED, PREEMPTED = "QueueTimeout", "AdmissionCheckRejected", "Preempted"
NO_CAPACITY = "NoCapacity"  # this capacity choice got none within capacity_wait: try the next
QUEUE_REASONS = (QUEUE_TIMEOUT, REJECTED, PREEMPTED, "Deactivated", NO_CAPACITY)
UNTIL = ("running", "admitted")  # what ends the queue wait: all pods running, or admission
# Evictions that stopped a running job (Kueue's Evicted reasons); each costs a restart.
RESTARTING_EVICTIONS = ("Preempted", "PodsReadyTimeout", "NodeFailures")


class QueueFailed(Exception):
    """The wait for capacity is over without it: ``reason`` is one of QUEUE_REASONS."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return status.condition(obj, kind) or {}


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    return status.condition(obj, kind, status="True") is not None


def evictions(workload: Mapping[str, Any]) -> int:
    """How often Kueue stopped this Workload while it ran (``schedulingStats``, Kueue 0.13+)."""
    stats = ((workload.get("status") or {}).get("schedulingStats") or {}).get("evictions") or ()
    return sum(int(s.get("count", 0)) for s in stats if s.get("reason") in RESTARTING_EVICTIONS)


def admission(workload: Mapping[str, Any]) -> dict[str, str]:
    """Where Kueue admitted the Workload: its ClusterQueue, the flavor(s) it assigned, and
    the worker cluster MultiKueue dispatched it to (``status.clusterName``)."""
    state = workload.get("status") or {}
    admitted = state.get("admission") or {}
    flavors = sorted(
        {
            f
            for a in admitted.get("podSetAssignments") or ()
            for f in (a.get("flavors") or {}).values()
        }
    )
    return {
        "cluster_queue": admitted.get("clusterQueue") or "",
        "flavor": ", ".join(flavors),
        "worker": state.get("clusterName") or "",
    }


def describe(workload: Mapping[str, Any], position: str, capacity: str | None = None) -> str:
    """One line: what Kueue says about the Workload now (``capacity``: what the admitting
    flavor's node labels mean, once the JobSet is unsuspended with them)."""
    checks = (workload.get("status") or {}).get("admissionChecks") or ()
    if not _true(workload, "QuotaReserved"):
        message = _condition(workload, "QuotaReserved").get("message") or "not yet considered"
        return f"waiting: {message}" + (f", {position}" if position else "")
    where = admission(workload)
    cq = where["cluster_queue"] or "?"
    if _true(workload, "Admitted"):
        line = f"admitted by Kueue (ClusterQueue {cq})"
        if where["flavor"]:
            line += f" on flavor {where['flavor']}" + (f" ({capacity})" if capacity else "")
        if where["worker"]:
            line += f", on worker cluster {where['worker']}"
        return line
    states = "; ".join(
        f"{c.get('name')} {c.get('state')}" + (f" ({c['message']})" if c.get("message") else "")
        for c in checks
    )
    return f"quota reserved in ClusterQueue {cq}; waiting: admission checks {states or 'pending'}"


class QueueWait:
    """Follows one JobSet's wait for capacity; fails it through ``on_fail``."""

    def __init__(
        self,
        cluster: KubernetesCluster,
        hook: AsyncJobSetOperations,
        name: str,
        namespace: str,
        options: WatchOptions,
        *,
        on_fail: Callable[[QueueFailed], None],
        log: logging.Logger | Any,
        connection_extras: dict[str, Any] | None = None,
        on_admitted: Callable[[Mapping[str, str]], None] = lambda facts: None,
    ) -> None:
        self.cluster, self.hook, self.name, self.namespace = cluster, hook, name, namespace
        self.timeout, self.until = options.queue_timeout, options.queue_until
        self.on_admitted = on_admitted
        self.capacity_wait: float | None = None  # the JobSet's own (its capacity choice's)
        self.retry_budget = options.retry_budget
        self.on_fail, self.log, self.connection_extras = on_fail, log, connection_extras
        self.last = ""  # the last reason told: what a timeout says
        self._jobset: Mapping[str, Any] = {}
        self._workload: Mapping[str, Any] = {}
        self._position = ""
        self._seen_evictions = 0
        self._eviction: tuple[Any, ...] = ()  # the Evicted condition last counted
        self._waiting_since: float | None = None
        self._waited = False  # whether a wait has been timed yet
        self._had_capacity = False  # every pod ran once: capacity_wait is over
        self._tasks: dict[str, asyncio.Task[None]] = {}

    # what the trigger tells it -------------------------------------------------------------

    def update(self, jobset: Mapping[str, Any]) -> None:
        """A JobSet change: start following its Workload; (re)arm or stop the timer."""
        self._jobset = jobset
        self.capacity_wait = capacity_wait(jobset)
        queue = ((jobset.get("metadata") or {}).get("labels") or {}).get(KUEUE_QUEUE_LABEL)
        if queue and "workload" not in self._tasks:
            self._start("workload", self._follow_workload(status.uid(jobset) or ""))
        if queue and not status.is_suspended(jobset) and not self._workload:
            self._say("admitted by Kueue (the JobSet is unsuspended)")
        elif self._workload and _true(self._workload, "Admitted"):
            self._tell_admission()
        self._arm()
        self._arm_capacity()

    def stuck(self, err: PodsCannotStart) -> Exception:
        """A pod that can never start ends the wait; with a next capacity choice, it means
        this choice has no capacity."""
        return err if self.capacity_wait is None else QueueFailed(NO_CAPACITY, str(err))

    def pods_waiting(self, reason: str) -> None:
        """Why a pod is not scheduled (kube-scheduler's message), from the pod checks."""
        if not status.is_suspended(self._jobset):
            self._say(f"waiting: {reason}")

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    # the timer -----------------------------------------------------------------------------

    def _done_waiting(self) -> bool:
        if self.until == "admitted":
            if self._workload:
                return _true(self._workload, "Admitted")
            return not status.is_suspended(self._jobset)
        return status.all_ready(self._jobset)

    def _arm(self) -> None:
        if self.timeout is None or status.terminal_state(self._jobset) is not None:
            return
        if self._done_waiting():
            self._waiting_since = None
            if task := self._tasks.pop("timer", None):
                task.cancel()
            return
        if self._waiting_since is None:  # the first wait counts from creation; later, from now
            created = epoch((self._jobset.get("metadata") or {}).get("creationTimestamp"))
            self._waiting_since = time.time() if self._waited or not created else created
            self._waited = True
            self._start("timer", self._expire(self._waiting_since + self.timeout))

    async def _expire(self, at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.time()))
        what = "admitted by Kueue" if self.until == "admitted" else "running on all hosts"
        self.on_fail(
            QueueFailed(
                QUEUE_TIMEOUT,
                f"JobSet {self.namespace}/{self.name} was not {what} within queue_timeout "
                f"({self.timeout:g}s); last: {self.last or 'no reason given'}",
            )
        )

    def _arm_capacity(self) -> None:
        """``capacity_wait``: from creation until every pod first runs; past it this capacity
        choice has none to give, and the next one is tried."""
        if self.capacity_wait is None or self._had_capacity:
            return
        if status.all_ready(self._jobset) or status.terminal_state(self._jobset) is not None:
            self._had_capacity = True
            if task := self._tasks.pop("capacity", None):
                task.cancel()
        elif "capacity" not in self._tasks:
            created = epoch((self._jobset.get("metadata") or {}).get("creationTimestamp"))
            self._start(
                "capacity", self._no_capacity((created or time.time()) + self.capacity_wait)
            )

    async def _no_capacity(self, at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.time()))
        self.on_fail(
            QueueFailed(
                NO_CAPACITY,
                f"no capacity within capacity_wait ({self.capacity_wait:g}s); last: "
                f"{self.last or 'no reason given'}",
            )
        )

    # Kueue -----------------------------------------------------------------------------------

    async def _follow_workload(self, uid: str) -> None:
        try:
            async with subscribe(
                self.cluster,
                self.namespace,
                uid,
                resource=WORKLOADS,
                retry_budget=self.retry_budget,
                connection_extras=self.connection_extras,
            ) as changes:
                while True:
                    change = await changes.next()
                    if change.obj is not None:
                        self._on_workload(change.obj)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning(
                "Kueue's Workload for JobSet %s/%s cannot be read (%s); the task log shows "
                "the pods' scheduling instead",
                self.namespace,
                self.name,
                err,
            )

    def _on_workload(self, workload: Mapping[str, Any]) -> None:
        self._workload = workload
        spec = workload.get("spec") or {}
        checks = (workload.get("status") or {}).get("admissionChecks") or ()
        if rejected := [c for c in checks if c.get("state") == "Rejected"]:
            check = rejected[0]
            return self.on_fail(
                QueueFailed(
                    REJECTED if self.capacity_wait is None else NO_CAPACITY,
                    f"Kueue rejected JobSet {self.namespace}/{self.name}: admission check "
                    f"{check.get('name')}: {check.get('message') or 'Rejected'}",
                )
            )
        if spec.get("active") is False:
            why = _condition(workload, "Evicted").get("message") or "spec.active is false"
            return self.on_fail(QueueFailed("Deactivated", f"Kueue deactivated it: {why}"))
        self._check_evictions(workload)
        pending = not _true(workload, "QuotaReserved")
        if pending and "position" not in self._tasks:
            self._start("position", self._follow_position(workload))
        elif not pending and (task := self._tasks.pop("position", None)):
            task.cancel()
            self._position = ""
        if _true(workload, "Admitted"):
            self._tell_admission()
        else:
            self._say(describe(workload, self._position))
        self._arm()

    def _tell_admission(self) -> None:
        """Say where Kueue admitted the JobSet, once it is unsuspended with the flavor's node
        labels (which say what capacity the flavor is); until then, the next change says it."""
        capacity, where = status.running_capacity(self._jobset), admission(self._workload)
        if capacity is None and not where["worker"]:  # MultiKueue: no flavor labels here
            return
        self.on_admitted(where)
        self._say(describe(self._workload, "", capacity))

    def _check_evictions(self, workload: Mapping[str, Any]) -> None:
        evicted = _condition(workload, "Evicted")
        counted = evictions(workload)
        if evicted.get("status") == "True" and evicted.get("reason") in RESTARTING_EVICTIONS:
            key = (evicted.get("lastTransitionTime"), evicted.get("message"))
            if key == self._eviction:
                return  # the eviction already counted
            self._eviction = key
            count = self._seen_evictions = max(counted, self._seen_evictions + 1)
            self._evicted(count, evicted.get("message") or evicted.get("reason") or "Evicted")
        elif counted > self._seen_evictions:
            # An eviction whose condition came and went between two looks (a busy API server,
            # a relist): Kueue's own count still has it.
            self._seen_evictions = counted
            stats = ((workload.get("status") or {}).get("schedulingStats") or {}).get("evictions")
            reasons = sorted(
                {e["reason"] for e in stats or () if e.get("reason") in RESTARTING_EVICTIONS}
            )
            self._evicted(counted, f"{', '.join(reasons)} (counted by Kueue; readmitted since)")

    def _evicted(self, count: int, message: str) -> None:
        """Eviction number ``count``: within max_restarts it is said and waited out;
        beyond, the wait fails."""
        info = status.summary(self._jobset)
        used, allowed = count + info["restarts"], info["maxRestarts"]
        if used > allowed:
            self.on_fail(
                QueueFailed(
                    PREEMPTED,
                    f"Kueue evicted JobSet {self.namespace}/{self.name} ({message}); with "
                    f"{info['restarts']} restarts and {count} evictions that is more than "
                    f"max_restarts={allowed}",
                )
            )
            return
        self._say(
            f"evicted by Kueue: {message}; it resumes when readmitted (restart {used} of "
            f"max_restarts={allowed})"
        )

    async def _follow_position(self, workload: Mapping[str, Any]) -> None:
        queue = (workload.get("spec") or {}).get("queueName") or ""
        name = (workload.get("metadata") or {}).get("name") or ""

        def heard(position: int | None, why: str | None) -> None:
            if why is not None:
                self.log.info("%s", why)
            self._position = "" if position is None else f"position {position} in queue {queue}"
            if self._workload and not _true(self._workload, "QuotaReserved"):
                self._say(describe(self._workload, self._position))

        async with follow_position(self.cluster, self.hook, self.namespace, queue, name, heard):
            await asyncio.Event().wait()  # until cancelled

    # plumbing ------------------------------------------------------------------------------

    def _say(self, line: str) -> None:
        if line and line != self.last:
            self.last = line
            self.log.info("Queue: %s", line)

    def _start(self, key: str, work: Any) -> None:
        self._tasks[key] = asyncio.create_task(work, name=f"queue-{key}-{self.name}")
