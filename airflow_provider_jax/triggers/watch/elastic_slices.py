"""When an elastic JobSet (``min_slices``) changes size, seen beside its wait.

- **Shrink.** After a slice loses its nodes the JobSet restarts, and that slice's new pods wait
  unbound (``PodScheduled=False``, ``Unschedulable``). Once they have waited ``shrink_after``
  from their creation, and the slices whose pods are bound are at least ``min_slices``, the
  wait ends with a resize to those slices.
- **Grow.** While the JobSet runs smaller and every pod is bound, the look counts the free
  capacity from **node state**: Ready, schedulable nodes that match the pods' node selector and
  hold none of this JobSet's pods, grouped by node pool, a slice for each ``hosts`` of them.
  When that makes the full size, it notes the newest finalized checkpoint; at the next one,
  the wait ends with a resize to the full size, from it.

Node state costs one list request a look and holds no capacity (a probe job would). It reads
Nodes, which a namespaced Role cannot grant: without ``list`` on nodes the job shrinks but does
not grow back, and the task log says so once. A pool another tenant's pods hold looks free to
it; the grown JobSet then waits for it, and shrinks again after ``shrink_after``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_jax.checkpoints import CheckpointQuery, afind_newest_finalized
from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.hooks.api_errors import api_status, explain, is_transient
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.manifest import status
from airflow_provider_jax.manifest.jobset_api import NODEPOOL_LABEL
from airflow_provider_jax.reporting.goodput import epoch
from airflow_provider_jax.runtime.env import GREW, SHRUNK

MAX_LOOK_S = 5.0  # between looks; less for a short shrink_after


class Resize(Exception):
    """The wait ends: the JobSet goes on at ``slices`` (``reason``: shrunk or grew)."""

    def __init__(self, slices: int, reason: str, line: str) -> None:
        self.slices, self.reason, self.line = slices, reason, line
        super().__init__(line)


class ElasticWatch:
    """The looks of one elastic JobSet's wait, on the event loop until :meth:`stop`.

    :param hook: the cluster's client.
    :param name: the JobSet's name.
    :param namespace: its namespace.
    :param elastic: the job's size policy and its size now.
    :param on_resize: called once with the :class:`Resize` that ends the wait.
    :param log: the task log.
    :param gcp_conn_id: the connection that lists ``gs://`` checkpoints.
    """

    def __init__(
        self,
        hook: AsyncJobSetOperations,
        name: str,
        namespace: str,
        elastic: ElasticSlices,
        *,
        on_resize: Callable[[Resize], None],
        log: Any,
        gcp_conn_id: str,
    ) -> None:
        self.hook, self.name, self.namespace, self.elastic = hook, name, namespace, elastic
        self.on_resize, self.log = on_resize, log
        self.query = (
            CheckpointQuery(elastic.checkpoint_dir, gcp_conn_id=gcp_conn_id)
            if elastic.checkpoint_dir
            else None
        )
        self.interval = min(MAX_LOOK_S, elastic.shrink_after / 4)
        self._jobset: Mapping[str, Any] = {}
        self._back: int | bool | None = False  # capacity back: the newest step then
        self._nodes_readable = True
        self._task = asyncio.create_task(self._run(), name=f"elastic-{name}")

    def update(self, jobset: Mapping[str, Any]) -> None:
        """Hear of a JobSet change: looks are made while it runs."""
        self._jobset = jobset

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            if not self._jobset or status.terminal_state(self._jobset) is not None:
                continue
            try:
                move = await self._look()
            except Exception as err:
                if not is_transient(err):
                    self.log.warning("Elastic slices: a look failed: %s", explain(err))
                continue
            if move is not None:
                self.on_resize(move)
                return

    async def _look(self) -> Resize | None:
        pods = status.latest_attempt(await self.hook.list_jobset_pods(self.name, self.namespace))
        elastic, now = self.elastic, time.time()
        waiting: dict[int, float] = {}  # slice -> since when its newest unbound pod waits
        bound: set[int] = set()
        for pod in pods:
            where, _ = status.position(pod)
            if (pod.get("spec") or {}).get("nodeName"):
                bound.add(where)
            elif not status.is_deleting(pod):
                created = epoch(pod["metadata"].get("creationTimestamp")) or now
                waiting[where] = max(waiting.get(where, 0.0), created)
        bound -= set(waiting)
        if waiting:
            self._back = False
            if now - max(waiting.values()) < elastic.shrink_after:
                return None
            to = elastic.shrinks_to(len(bound))
            if to is None:
                return None
            step = await self._newest_step()
            return Resize(to, SHRUNK, elastic.shrink_line(self.name, to, step))
        if elastic.now >= elastic.full or not pods or len(bound) < elastic.now:
            return None
        free = await self._free_slices(pods)
        if free is None or not elastic.grows(elastic.now + free):
            if self._back is not False:
                self.log.info("%s", elastic.gone_line(self.name))
            self._back = False
            return None
        step = await self._newest_step()
        if self._back is False:
            self._back = step
            self.log.info("%s", elastic.back_line(self.name, step))
            return None
        if step is None or (self._back is not None and step <= self._back):
            return None
        return Resize(elastic.full, GREW, elastic.grow_line(self.name, step))

    async def _newest_step(self) -> int | None:
        if self.query is None:
            return None
        with contextlib.suppress(Exception):  # the next look tries again
            found = await afind_newest_finalized(self.query)
            return None if found is None else found.step
        return None

    async def _free_slices(self, pods: list[Mapping[str, Any]]) -> int | None:
        """Slices' worth of free nodes for ``pods`` (this JobSet's, all bound), or None when
        Nodes cannot be read (said once)."""
        if not self._nodes_readable:
            return None
        held = {p["spec"]["nodeName"] for p in pods}
        selector = (pods[0].get("spec") or {}).get("nodeSelector") or {}
        try:
            nodes = await self.hook.list_nodes(",".join(f"{k}={v}" for k, v in selector.items()))
        except Exception as err:
            if api_status(err) != 403:
                raise
            self._nodes_readable = False
            self.log.warning(
                "%s: Nodes cannot be read (%s): the job shrinks when it loses slices, but does "
                "not grow back. Grant list on nodes (docs/elastic.md).",
                self.name,
                explain(err),
            )
            return None
        pools: Counter[str] = Counter()
        for node in nodes:
            name = node["metadata"]["name"]
            if name in held or (node.get("spec") or {}).get("unschedulable"):
                continue
            if status.condition(node, "Ready", status="True") is None:
                continue
            pools[(node["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, name)] += 1
        hosts = len(pods) // max(self.elastic.now, 1) or 1  # the pods of one slice
        return sum(count // hosts for count in pools.values())
