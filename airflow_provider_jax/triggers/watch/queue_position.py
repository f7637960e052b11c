"""Where each waiting Workload stands in its LocalQueue, from Kueue's visibility API, with one
request per queue however many jobs wait in it.

One poller per (cluster, namespace, queue) per event loop asks every ``every`` seconds while
anyone waits there and tells each waiter its 1-based position (1: admitted next, quota
allowing). Where the API is not served (Kueue before 0.6, or its visibility server off) or the
identity may not read it, it says so once and stops: positions are a convenience, never a
reason to fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from airflow_provider_jax.hooks.api_errors import api_status, explain, is_transient
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.hooks.kueue import pending_workloads
from airflow_provider_jax.hooks.resources import VISIBILITY_VERSIONS
from airflow_provider_jax.triggers.watch.per_loop import PerLoop

log = logging.getLogger(__name__)
POSITION_EVERY = 30.0  # seconds between asks: 2 requests a minute per queue, not per job
NEWCOMER_GAP = 5.0  # a newcomer is answered this soon, so a thousand arriving cost a few asks

Listener = Callable[[int | None, str | None], None]  # (position or None, why not known)


class QueuePositions:
    """The shared poller of one LocalQueue; use it through :func:`follow_position`."""

    def __init__(
        self, hook: AsyncJobSetOperations, namespace: str, queue: str, every: float
    ) -> None:
        self.hook, self.namespace, self.queue, self.every = hook, namespace, queue, every
        self.versions = list(VISIBILITY_VERSIONS)
        self.listeners: dict[str, set[Listener]] = {}  # workload name -> listeners
        self.unavailable: str | None = None  # why positions cannot be had, once known
        self.task: asyncio.Task[None] | None = None
        self._asked = asyncio.Event()

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def add(self, workload: str, listener: Listener) -> None:
        self.listeners.setdefault(workload, set()).add(listener)
        if self.unavailable is not None:
            listener(None, self.unavailable)
        elif not self.running:
            self.task = asyncio.create_task(self._run(), name=f"queue-positions-{self.queue}")
        else:
            self._asked.set()  # a newcomer hears its position soon, not a period later

    def remove(self, workload: str, listener: Listener) -> bool:
        """Drop ``listener``; True when no one listens any more (the poller has stopped)."""
        listeners = self.listeners.get(workload, set())
        listeners.discard(listener)
        if not listeners:
            self.listeners.pop(workload, None)
        if self.listeners:
            return False
        if self.task is not None:
            self.task.cancel()
        return True

    async def _run(self) -> None:
        while self.listeners:
            try:
                items = await self._ask()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                if not is_transient(err):
                    return self._give_up(explain(err))
                items = None  # ask again next round
            if items is not None:
                positions = {
                    (w.get("metadata") or {}).get("name"): w.get("positionInLocalQueue")
                    for w in items
                }
                for name, listeners in list(self.listeners.items()):
                    at = positions.get(name)
                    for listener in list(listeners):
                        listener(None if at is None else at + 1, None)
            self._asked.clear()
            gap = min(self.every, NEWCOMER_GAP)
            await asyncio.sleep(gap)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.every - gap):
                    await self._asked.wait()

    async def _ask(self) -> list[dict[str, Any]]:
        while True:
            try:
                return await pending_workloads(
                    self.hook, self.namespace, self.queue, self.versions[0]
                )
            except Exception as err:
                if api_status(err) == 404 and len(self.versions) > 1:
                    self.versions.pop(0)  # not served at this version: try an older one
                    continue
                raise

    def _give_up(self, why: str) -> None:
        self.unavailable = f"queue position not shown: {why}"
        log.warning("Kueue's visibility API for %s/%s: %s", self.namespace, self.queue, why)
        for listeners in list(self.listeners.values()):
            for listener in list(listeners):
                listener(None, self.unavailable)


_pollers: PerLoop[tuple[KubernetesCluster, str, str], QueuePositions] = PerLoop()


@contextlib.asynccontextmanager
async def follow_position(
    cluster: KubernetesCluster,
    hook: AsyncJobSetOperations,
    namespace: str,
    queue: str,
    workload: str,
    listener: Listener,
    every: float = POSITION_EVERY,
) -> AsyncIterator[None]:
    """Tell ``listener`` the Workload's position in ``queue`` as it changes, while inside."""
    key = (cluster, namespace, queue)
    poller = _pollers.get(
        key,
        lambda: QueuePositions(hook, namespace, queue, every),
        # One that gave up stays, so a newcomer hears why at once instead of asking again.
        lambda poller: poller.running or poller.unavailable is not None,
    )
    poller.add(workload, listener)
    try:
        yield
    finally:
        if poller.remove(workload, listener):
            _pollers.forget(key, poller)
