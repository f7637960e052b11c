"""``JobSetTrigger``: wait in the triggerer until a JobSet has finished, then fire once."""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from airflow import __version__ as airflow_version
from airflow.triggers.base import BaseTrigger, TriggerEvent
from packaging.version import Version

from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.metrics.send import WAITING_JOBSETS
from airflow_provider_jax.triggers.watch.events import (
    ERROR,
    FAILED,
    SUCCESS,
    TIMEOUT,
    JobSetEvent,
)
from airflow_provider_jax.triggers.watch.run_clock import RunClock
from airflow_provider_jax.triggers.watch.task_state import (
    in_background,
    task_left_deferred,
    warm_up,
)

__all__ = ["ERROR", "FAILED", "SUCCESS", "TIMEOUT", "JobSetTrigger", "load_watch"]
# From 3.3 the triggerer calls on_kill() for user actions (and, wrongly, when a trigger moves to
# another triggerer: see on_kill); before, cleanup() must ask.
_TRIGGER_ON_KILL = Version(Version(airflow_version).base_version) >= Version("3.3.0")
_WATCH = "airflow_provider_jax.triggers.watch.jobset_wait"
_GKE_HOOKS = "airflow_provider_jax.hooks.gke"
_loaded: set[str] = set()  # modules fully imported by load_watch


async def load_watch(cluster: KubernetesCluster) -> ModuleType:
    """The waiting machinery (:mod:`~airflow_provider_jax.triggers.watch.jobset_wait`), imported
    in a worker thread the first time: this module stays light because Airflow imports a
    trigger's class on the triggerer's event loop, and seconds of Kubernetes-client imports
    there stall every trigger on that triggerer (past ``[triggerer]
    runner_health_check_threshold``, its heartbeat too). Triggers that start while the
    import runs wait for it to finish (a module is in ``sys.modules`` from its first line, so
    its presence there says nothing)."""
    wanted = (_WATCH, *((_GKE_HOOKS,) if cluster.is_gke else ()))
    if missing := [name for name in wanted if name not in _loaded]:
        await asyncio.to_thread(lambda: [importlib.import_module(name) for name in missing])
        _loaded.update(missing)
    return sys.modules[_WATCH]


class JobSetTrigger(BaseTrigger):
    """Fire exactly one event when JobSet ``name`` (with ``uid``) completes, fails, vanishes,
    or runs past ``deadline`` (epoch seconds: the task's ``execution_timeout``).

    Holds plain data only, including the cluster (:class:`KubernetesCluster` as a dict: a
    connection id, or a GKE endpoint and Google connection), and has no side effect while it
    waits, so running it twice is harmless. Past ``deadline`` it deletes the JobSet (by uid,
    so never a successor) before firing: the slice stops at once. Waiting costs almost
    nothing: the JobSet is watched through the informer shared by every trigger on that
    (cluster, namespace). How it waits, and what of the job reaches the task log, are the
    :class:`~airflow_provider_jax.contract.watch_options.WatchOptions` fields, passed as
    kwargs of the same names and held as :attr:`watch` (the leader's or every host's log
    lines, at most ``log_lines`` per host; the queue timeout; the poll interval without watch
    permission). A pod that can never start (its image cannot be pulled) ends the wait at
    once. While it waits for capacity, each change in why (Kueue's verdict, its queue position,
    unschedulable pods) is logged; past ``queue_timeout`` seconds from its creation without all
    pods running
    (``queue_until="running"``) or Kueue's admission (``"admitted"``), or when Kueue gives
    up on it, the JobSet is deleted and the task fails.

    An elastic job's trigger (``elastic``: ``ElasticSlices.as_row()``) also ends its wait
    with a ``resize`` event when the job changes size (``watch/elastic_slices.py``), the
    JobSet deleted first; its ledger goes on from ``goodput_before``, the earlier sizes'.

    The event is a :class:`~airflow_provider_jax.triggers.watch.events.JobSetEvent` as a dict,
    fired no earlier than ``fire_not_before`` (epoch seconds; see
    :data:`~airflow_provider_jax.backends.RESUME_SETTLE_S`).
    """

    def __init__(
        self,
        *,
        name: str,
        namespace: str,
        uid: str,
        cluster: dict[str, Any],
        deadline: float | None = None,
        fire_not_before: float | None = None,
        elastic: dict[str, Any] | None = None,
        goodput_before: dict[str, Any] | None = None,
        **watch: Any,
    ) -> None:
        super().__init__()
        self.name = name
        self.namespace = namespace
        self.uid = uid
        self.cluster = dict(cluster)
        self.deadline = deadline
        self.fire_not_before = fire_not_before
        self.elastic = dict(elastic) if elastic else None  # ElasticSlices.as_row()
        self.goodput_before = goodput_before  # the ledger of the try's earlier JobSets
        self.watch = WatchOptions(**watch)  # its fields are this trigger's row's other kwargs
        self.clock = RunClock()  # in memory only: the goodput ledger of what this run sees
        self._fired = False

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
                "cluster": self.cluster,
                "deadline": self.deadline,
                **self.watch.as_row(),
                **(
                    {"fire_not_before": self.fire_not_before}
                    if self.fire_not_before is not None
                    else {}
                ),
                **({"elastic": self.elastic} if self.elastic else {}),
                **({"goodput_before": self.goodput_before} if self.goodput_before else {}),
            },
        )

    @property
    def kubernetes(self) -> KubernetesCluster:
        return KubernetesCluster.from_dict(self.cluster)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_provider_jax.triggers.watch import orphans

        orphans.enabled = True  # a triggerer: its shared watches sweep abandoned JobSets
        if _TRIGGER_ON_KILL:
            warm_up(getattr(self, "task_instance", None))  # for on_kill's state read
        WAITING_JOBSETS.add(1)
        try:
            event = await self.wait()
        finally:
            WAITING_JOBSETS.add(-1)
        if self.fire_not_before is not None:  # the JobSet is already deleted where it must be
            await asyncio.sleep(max(self.fire_not_before - time.time(), 0))
        self._fired = True
        yield TriggerEvent(event.to_dict())

    async def wait(self, connection_extras: dict[str, Any] | None = None) -> JobSetEvent:
        """The event this trigger fires; the operator's blocking mode awaits it directly.
        It carries the restarts seen and the goodput ledger (the leader's last lines in)."""
        watch = await load_watch(self.kubernetes)
        return await watch.wait(self._watched(watch), connection_extras)

    def _watched(self, watch: ModuleType) -> Any:
        """What the wait reads (a ``jobset_wait.WatchedJobSet``): plain values and the log."""
        return watch.WatchedJobSet(
            name=self.name,
            namespace=self.namespace,
            uid=self.uid,
            cluster=self.kubernetes,
            deadline=self.deadline,
            options=self.watch,
            log=self.log,
            clock=self.clock,
            elastic=ElasticSlices(**self.elastic) if self.elastic else None,
            goodput_before=self.goodput_before,
        )

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

    async def _delete(self) -> None:
        watch = await load_watch(self.kubernetes)
        await watch.delete(self._watched(watch))
