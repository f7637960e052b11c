"""How a JobSet is waited on and deleted: :class:`WatchedJobSet` in, one :class:`JobSetEvent` out.

Apart from the trigger's class because the triggerer imports a trigger's class on its event
loop: the Kubernetes clients and the cncf hooks this needs are about 2,000 modules, seconds
of import during which no trigger on that triggerer runs. The trigger loads this module in a
worker thread (:func:`~airflow_provider_jax.triggers.jobset.load_watch`) instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.hooks.api_errors import api_status, explain
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.manifest import status
from airflow_provider_jax.reporting.goodput import merged
from airflow_provider_jax.triggers.watch.checkpoint_freshness import CheckpointFreshness
from airflow_provider_jax.triggers.watch.elastic_slices import ElasticWatch, Resize
from airflow_provider_jax.triggers.watch.events import (
    ERROR,
    FAILED,
    RESIZE,
    SUCCESS,
    TIMEOUT,
    JobSetEvent,
)
from airflow_provider_jax.triggers.watch.informer import ABSENT, Change, subscribe
from airflow_provider_jax.triggers.watch.pod_logs import PodLogs
from airflow_provider_jax.triggers.watch.pod_startup import REASON as CANNOT_START
from airflow_provider_jax.triggers.watch.pod_startup import PodsCannotStart, PodStartup
from airflow_provider_jax.triggers.watch.queue_wait import QueueFailed, QueueWait
from airflow_provider_jax.triggers.watch.restarts import RestartLog
from airflow_provider_jax.triggers.watch.retry_budget import ApiUnavailable, with_retries
from airflow_provider_jax.triggers.watch.run_clock import RunClock
from airflow_provider_jax.triggers.watch.worker_pods import WorkerPods

LOG_GRACE = 5.0  # seconds to show the end of the finished pods' logs before firing


@dataclass(frozen=True)
class WatchedJobSet:
    """Which JobSet a wait is for and how to wait on it: everything the wait reads.

    :param name: the JobSet's name.
    :param namespace: its namespace.
    :param uid: its uid: the wait ends, and a delete acts, on that object only.
    :param cluster: where it runs.
    :param deadline: when the task's ``execution_timeout`` runs out (epoch seconds), or None.
    :param options: how it is waited on and what of it reaches the task log.
    :param log: the task log.
    :param clock: the goodput ledger of what this wait sees (in memory only).
    :param restarts: a line per restart this wait saw (in memory only).
    :param elastic: an elastic job's size policy and its size now (``min_slices``), or None.
    :param goodput_before: the ledger of the try's earlier JobSets (an elastic job's other
        sizes), which this one's adds to.
    """

    name: str
    namespace: str
    uid: str
    cluster: KubernetesCluster
    deadline: float | None
    options: WatchOptions
    log: Any
    clock: RunClock = field(default_factory=RunClock)
    restarts: list[str] = field(default_factory=list)
    elastic: ElasticSlices | None = None
    goodput_before: dict[str, Any] | None = None

    @property
    def where(self) -> str:
        return f"JobSet {self.namespace}/{self.name}"

    def event(
        self, outcome: str, reason: str, message: str, jobset: dict[str, Any] | None = None
    ) -> JobSetEvent:
        """The event to fire, and the end of this run's goodput ledger."""
        self.clock.finish(None if outcome == SUCCESS else reason)
        return JobSetEvent(outcome, self.name, self.namespace, self.uid, reason, message, jobset)


async def wait(job: WatchedJobSet, connection_extras: dict[str, Any] | None) -> JobSetEvent:
    """The event ``job``'s wait ends with: its end, or why the wait itself ended, with the
    restarts it saw and its goodput ledger."""
    event = await _until_deadline(job, connection_extras)
    ledger = job.clock.ledger()
    if ledger is not None and job.goodput_before:
        ledger = merged(job.goodput_before, ledger)
    return replace(event, restarts=list(job.restarts), goodput=ledger or job.goodput_before)


async def _until_deadline(
    job: WatchedJobSet, connection_extras: dict[str, Any] | None
) -> JobSetEvent:
    deadline = job.deadline
    limit = asyncio.timeout(None if deadline is None else deadline - time.time())
    try:
        async with limit:
            return await _watch(job, connection_extras)
    except TimeoutError:
        if not limit.expired():
            raise
        # Stop the slice now, not once a worker has picked the task up again.
        await delete(job, connection_extras)
        return job.event(TIMEOUT, "ExecutionTimeout", "the task's execution_timeout passed")
    except PodsCannotStart as err:
        return job.event(FAILED, CANNOT_START, str(err))
    except Resize as move:
        # Its work goes on at the next size, from its checkpoint: a new JobSet of this name,
        # once this one is gone (the operator's submit waits for that).
        job.clock.finish(None)
        await delete(job, connection_extras)
        return replace(job.event(RESIZE, move.reason, move.line), slices=move.slices)
    except QueueFailed as err:
        await delete(job, connection_extras)  # queued, it holds quota; admitted, nodes
        return job.event(FAILED, err.reason, str(err))
    except ApiUnavailable as err:
        return job.event(ERROR, "ApiUnavailable", str(err))
    except Exception as err:
        if api_status(err) is None:
            raise
        # Not transient (401, 403, ...): waiting longer will not help.
        return job.event(ERROR, "ApiError", f"Kubernetes API refused a call: {explain(err)}")


async def delete(job: WatchedJobSet, connection_extras: dict[str, Any] | None = None) -> None:
    """Delete the JobSet (by uid, so never a successor), logging a failure."""
    name, namespace = job.name, job.namespace
    job.log.info("Deleting JobSet %s/%s (Foreground)", namespace, name)
    hook = job.cluster.async_hook(connection_extras)
    try:
        await hook.delete_jobset(name, namespace, job.uid)
    except Exception:
        job.log.exception("Could not delete JobSet %s/%s", namespace, name)


async def _watch(job: WatchedJobSet, connection_extras: dict[str, Any] | None) -> JobSetEvent:
    options, log = job.options, job.log
    async with subscribe(
        job.cluster,
        job.namespace,
        job.name,
        poll_interval=options.poll_interval,
        retry_budget=options.retry_budget,
        connection_extras=connection_extras,
    ) as changes:
        # A thousand triggers starting at once must not each load a kubeconfig.
        hook = changes.hook
        pod_logs = _pod_logs(job, hook)
        workers = WorkerPods(
            job.name,
            job.namespace,
            hook,
            connection_extras,
            log,
            lambda worker_hook: _pod_logs(job, worker_hook),
        )

        def admitted(facts: Mapping[str, str]) -> None:
            job.clock.admitted(facts)
            workers.admitted(facts)

        queue = QueueWait(
            job.cluster,
            hook,
            job.name,
            job.namespace,
            options,
            on_fail=changes.put,
            log=log,
            connection_extras=connection_extras,
            on_admitted=admitted,
        )
        startup = PodStartup(
            hook,
            job.name,
            job.namespace,
            on_stuck=lambda err: changes.put(queue.stuck(err)),
            log=log,
            on_waiting=queue.pods_waiting,
        )
        restarts = RestartLog(hook, job.name, job.namespace, log, job.restarts)
        freshness = (
            CheckpointFreshness(options, job.clock, log, job.cluster.gcp_conn_id)
            if options.watches_checkpoints
            else None
        )
        elastic = None
        if job.elastic is not None:
            job.clock.size = (job.elastic.now, job.elastic.full)
            elastic = ElasticWatch(
                hook,
                job.name,
                job.namespace,
                job.elastic,
                on_resize=changes.put,
                log=log,
                gcp_conn_id=job.cluster.gcp_conn_id,
            )
        try:
            while True:
                change = await changes.next()
                if change.type == ABSENT or status.uid(change.obj) != job.uid:
                    # Not news about our JobSet (a lagging watch, a predecessor's
                    # DELETED): ask the API server itself.
                    fresh = await with_retries(
                        lambda: hook.get_jobset(job.name, job.namespace), options.retry_budget
                    )
                    change = Change("GET", fresh)
                if change.obj is not None:
                    for attempt, culprit in await restarts.update(change.obj):
                        job.clock.restarted(attempt, culprit.kind if culprit else None)
                    job.clock.seen(change.obj)  # after: the old attempt ends first
                    startup.update(change.obj)
                    queue.update(change.obj)
                    if pod_logs is not None:
                        pod_logs.update(change.obj)
                    workers.update(change.obj)
                    if elastic is not None:
                        elastic.update(change.obj)
                if (event := _verdict(job, change)) is not None:
                    if event.status == SUCCESS and workers.hook is not None:
                        event = replace(event, leader_message=await workers.leader_message())
                    if pod_logs is not None:
                        await pod_logs.stop(grace=LOG_GRACE)
                    await workers.stop(grace=LOG_GRACE)
                    return event
        finally:
            if elastic is not None:
                await elastic.stop()
            if freshness is not None:
                await freshness.stop()
            await queue.stop()
            await startup.stop()
            await workers.stop()
            if pod_logs is not None:
                await pod_logs.stop()


def _pod_logs(job: WatchedJobSet, hook: AsyncJobSetOperations) -> PodLogs | None:
    """The log stream of ``job``'s pods on the cluster ``hook`` reaches, if any is wanted."""
    options = job.options
    if not options.streams_pod_logs:
        return None
    return PodLogs(
        hook,
        job.name,
        job.namespace,
        every_host=options.every_host,
        max_lines=options.log_lines,
        log=job.log,
        on_line=job.clock.leader_line,
        deadlines=options.deadline_watch(),
    )


def _verdict(job: WatchedJobSet, change: Change) -> JobSetEvent | None:
    jobset = change.obj
    where = job.where
    if jobset is None or status.uid(jobset) != job.uid:
        return job.event(FAILED, "Deleted", f"{where} no longer exists; was it deleted?")
    info = status.summary(jobset)
    state = status.terminal_state(jobset)
    if state == status.COMPLETED:
        return job.event(SUCCESS, "Completed", f"{where} completed", info)
    if state == status.FAILED:
        failed: Mapping[str, Any] = next(
            (c for c in info["conditions"] if c["type"] == status.FAILED), {}
        )
        reason = failed.get("reason", "Failed")
        return job.event(FAILED, reason, failed.get("message", f"{where} failed"), info)
    if change.type == "DELETED" or status.is_deleting(jobset):
        return job.event(FAILED, "Deleted", f"{where} was deleted before it finished", info)
    return None
