"""How a :class:`~airflow_provider_jax.triggers.jobset.JobSetTrigger` waits and deletes.

Apart from the trigger's class because the triggerer imports a trigger's class on its event
loop: the Kubernetes clients and the cncf hooks this needs are about 2,000 modules, seconds
of import during which no trigger on that triggerer runs. The trigger loads this module in a
worker thread (:func:`~airflow_provider_jax.triggers.jobset.load_watch`) instead.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_jax.hooks.api_errors import api_status, explain
from airflow_provider_jax.jobset import status
from airflow_provider_jax.reporting.host_logs import STREAM_NONE
from airflow_provider_jax.triggers.watch.events import (
    ERROR,
    FAILED,
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

if TYPE_CHECKING:
    from airflow_provider_jax.triggers.jobset import JobSetTrigger

LOG_GRACE = 5.0  # seconds to show the end of the finished pods' logs before firing


async def wait(trigger: JobSetTrigger, connection_extras: dict[str, Any] | None) -> JobSetEvent:
    """The event ``trigger`` fires: its JobSet's end, or why the wait itself ended."""
    deadline = trigger.deadline
    limit = asyncio.timeout(None if deadline is None else deadline - time.time())
    try:
        async with limit:
            return await _watch(trigger, connection_extras)
    except TimeoutError:
        if not limit.expired():
            raise
        # Stop the slice now, not once a worker has picked the task up again.
        await delete(trigger, connection_extras)
        return trigger.event(TIMEOUT, "ExecutionTimeout", "the task's execution_timeout passed")
    except PodsCannotStart as err:
        return trigger.event(FAILED, CANNOT_START, str(err))
    except QueueFailed as err:
        await delete(trigger, connection_extras)  # queued, it holds quota; admitted, nodes
        return trigger.event(FAILED, err.reason, str(err))
    except ApiUnavailable as err:
        return trigger.event(ERROR, "ApiUnavailable", str(err))
    except Exception as err:
        if api_status(err) is None:
            raise
        # Not transient (401, 403, ...): waiting longer will not help.
        return trigger.event(ERROR, "ApiError", f"Kubernetes API refused a call: {explain(err)}")


async def delete(trigger: JobSetTrigger, connection_extras: dict[str, Any] | None = None) -> None:
    """Delete the trigger's JobSet (by uid, so never a successor), logging a failure."""
    name, namespace = trigger.name, trigger.namespace
    trigger.log.info("Deleting JobSet %s/%s (Foreground)", namespace, name)
    hook = trigger.kubernetes.async_hook(connection_extras)
    try:
        await hook.delete_jobset(name, namespace, trigger.uid)
    except Exception:
        trigger.log.exception("Could not delete JobSet %s/%s", namespace, name)


async def _watch(trigger: JobSetTrigger, connection_extras: dict[str, Any] | None) -> JobSetEvent:
    t = trigger
    async with subscribe(
        t.kubernetes,
        t.namespace,
        t.name,
        poll_interval=t.poll_interval,
        retry_budget=t.retry_budget,
        connection_extras=connection_extras,
    ) as changes:
        # A thousand triggers starting at once must not each load a kubeconfig.
        hook = changes.hook
        pod_logs = (
            PodLogs(
                hook,
                t.name,
                t.namespace,
                hosts=t.stream_logs,
                max_lines=t.log_lines,
                log=t.log,
                on_line=t.clock.leader_line,
            )
            if t.log_lines > 0 and t.stream_logs != STREAM_NONE
            else None
        )
        queue = QueueWait(
            t.kubernetes,
            hook,
            t.name,
            t.namespace,
            timeout=t.queue_timeout,
            until=t.queue_until,
            on_fail=changes.put,
            log=t.log,
            retry_budget=t.retry_budget,
            connection_extras=connection_extras,
        )
        startup = PodStartup(
            hook,
            t.name,
            t.namespace,
            on_stuck=changes.put,
            log=t.log,
            on_waiting=queue.pods_waiting,
        )
        restarts = RestartLog(hook, t.name, t.namespace, t.log)
        t.restart_lines = restarts.lines
        try:
            while True:
                change = await changes.next()
                if change.type == ABSENT or status.uid(change.obj) != t.uid:
                    # Not news about our JobSet (a lagging watch, a predecessor's
                    # DELETED): ask the API server itself.
                    fresh = await with_retries(
                        lambda: hook.get_jobset(t.name, t.namespace), t.retry_budget
                    )
                    change = Change("GET", fresh)
                if change.obj is not None:
                    for attempt, culprit in await restarts.update(change.obj):
                        t.clock.restarted(attempt, culprit.kind if culprit else None)
                    t.clock.seen(change.obj)  # after: the old attempt ends first
                    startup.update(change.obj)
                    queue.update(change.obj)
                    if pod_logs is not None:
                        pod_logs.update(change.obj)
                if (event := _verdict(t, change)) is not None:
                    if pod_logs is not None:
                        await pod_logs.stop(grace=LOG_GRACE)
                    return event
        finally:
            await queue.stop()
            await startup.stop()
            if pod_logs is not None:
                await pod_logs.stop()


def _verdict(trigger: JobSetTrigger, change: Change) -> JobSetEvent | None:
    jobset = change.obj
    where = f"JobSet {trigger.namespace}/{trigger.name}"
    if jobset is None or status.uid(jobset) != trigger.uid:
        return trigger.event(FAILED, "Deleted", f"{where} no longer exists; was it deleted?")
    info = status.summary(jobset)
    state = status.terminal_state(jobset)
    if state == status.COMPLETED:
        return trigger.event(SUCCESS, "Completed", f"{where} completed", info)
    if state == status.FAILED:
        failed = next((c for c in info["conditions"] if c["type"] == status.FAILED), {})
        reason = failed.get("reason", "Failed")
        return trigger.event(FAILED, reason, failed.get("message", f"{where} failed"), info)
    if change.type == "DELETED" or status.is_deleting(jobset):
        return trigger.event(FAILED, "Deleted", f"{where} was deleted before it finished", info)
    return None
