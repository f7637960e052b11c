"""One list+watch of a resource (JobSets; Kueue Workloads) per (cluster, namespace) per event
loop, shared by every trigger that waits on one there.

A triggerer running a thousand JAX jobs then holds one watch per namespace instead of a
thousand polls: about one request per five minutes per namespace while nothing fails, plus a
list whenever the watch has to start over. The watch resumes from the last resourceVersion it
saw (BOOKMARKs included); on 410 Gone it lists again and tells each waiter the current state,
so nothing that happened during the gap is missed. Where RBAC forbids watching it polls with
lists instead. Transient API errors (429, 5xx, lost connections) are retried with backoff until
they have lasted ``retry_budget`` seconds, as are refusals (401, 403) once a list has gone
through; then every waiter gets the error. A first list refused fails at once.

Why not Airflow 3.3's shared streams (``BaseEventTrigger.shared_stream_key``): they hand every
event to every waiter to filter, force-fail a waiter whose queue passes 1,024 unread events,
and show a late waiter nothing that happened before it joined; ``bench/shared_stream_fanout.py``
measures all three, and Airflow 3.1 and 3.2 lack them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.hooks.api_errors import api_status, explain, is_transient
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.hooks.resources import JOBSETS, Resource
from airflow_provider_jax.metrics.send import count_triggerer
from airflow_provider_jax.triggers.watch import orphans
from airflow_provider_jax.triggers.watch.per_loop import PerLoop
from airflow_provider_jax.triggers.watch.retry_budget import ApiUnavailable, Backoff

log = logging.getLogger(__name__)

WATCH_TIMEOUT = 300  # seconds a watch stays open before it is renewed
ABSENT = "ABSENT"  # not in a fresh list: deleted while we were not watching, or never there


@dataclass(frozen=True)
class Change:
    """What a waiter learns: ``type`` is ADDED/MODIFIED/DELETED from the watch, or ABSENT
    (with ``obj`` None) when a list did not have the object."""

    type: str
    obj: dict[str, Any] | None


class Subscription:
    """The changes to one object (by its resource's key: a JobSet's name, a Workload's job
    uid), in order, starting with its state when subscribed, and the informer's ``hook`` for
    the subscriber's own calls: its connection and config are loaded once for every
    subscriber, not once each."""

    def __init__(self, name: str, hook: AsyncJobSetOperations) -> None:
        self.name, self.hook = name, hook
        self._queue: asyncio.Queue[Change | BaseException] = asyncio.Queue()

    def put(self, item: Change | BaseException) -> None:
        self._queue.put_nowait(item)

    async def next(self) -> Change:
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item


@dataclass(eq=False)
class _Relist:
    """One list in progress: its pages are read in a task of their own while the watch from
    the first page's resourceVersion already runs, so a change after that version reaches its
    waiter without waiting for the other pages (a relist of 10,000 JobSets is 20 pages and
    seconds of parsing); each page's objects are told as the page arrives."""

    task: asyncio.Task[None] = field(init=False)  # reads the pages: see :meth:`start`
    version: asyncio.Future[str] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    seen: set[str] = field(default_factory=set)  # keys in the pages read so far
    touched: set[str] = field(default_factory=set)  # keys the watch changed: newer than a page

    @classmethod
    def start(cls, read: Callable[[_Relist], Coroutine[Any, Any, None]], name: str) -> _Relist:
        """A list whose pages ``read`` reads, in a task of its own from now on."""
        relist = cls()
        relist.task = asyncio.create_task(read(relist), name=name)
        return relist

    async def first_page(self) -> str:
        """The list's resourceVersion, once its first page is in (or the list's error)."""
        either: set[asyncio.Future[Any]] = {self.version, self.task}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not self.version.done():
            self.task.result()  # the list failed before its first page
        return self.version.result()

    def raised(self, err: BaseException) -> bool:
        """Whether ``err`` came from reading the pages (not from the watch beside them)."""
        task = self.task
        return task.done() and not task.cancelled() and task.exception() is err

    def cancel(self) -> None:
        if self.task.done() and not self.task.cancelled():
            self.task.exception()  # seen: its error, if any, was the watch's too
        self.task.cancel()
        self.version.cancel()


class Informer:
    """The shared list+watch loop; use it through :func:`subscribe`."""

    def __init__(
        self,
        hook: AsyncJobSetOperations,
        namespace: str,
        *,
        resource: Resource = JOBSETS,
        poll_interval: float = 10.0,
        retry_budget: float = 600.0,
    ) -> None:
        self.hook, self.namespace, self.resource = hook, namespace, resource
        self.poll_interval, self.retry_budget = poll_interval, retry_budget
        self.versions = list(resource.versions)  # the first is the one in use
        self.cache: dict[str, dict[str, Any]] = {}
        self.synced = False  # a list has gone through
        self.version: str | None = None  # to resume the watch from; None: list again
        self._relist: _Relist | None = None  # a list whose pages are still being read
        self.backoff = Backoff(retry_budget)
        self.polling = False
        self.subscribers: dict[str, set[Subscription]] = {}
        self.task: asyncio.Task[None] | None = None
        self.sweeper: asyncio.Task[None] | None = None  # JobSets only, in a triggerer

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self) -> Informer:
        self.task = asyncio.create_task(self._run(), name=self.task_name)
        if self.resource is JOBSETS and orphans.enabled:
            self.sweeper = asyncio.create_task(orphans.sweep_forever(self), name="jobset-sweep")
        return self

    def subscribe(self, name: str) -> Subscription:
        sub = Subscription(name, self.hook)
        self.subscribers.setdefault(name, set()).add(sub)
        if (obj := self.cache.get(name)) is not None:
            sub.put(Change("ADDED", obj))
        elif self.synced:  # else the first list's end tells
            sub.put(Change(ABSENT, None))
        return sub

    def unsubscribe(self, sub: Subscription) -> bool:
        """Drop ``sub``; True when it was the last one and the informer has stopped."""
        subs = self.subscribers.get(sub.name, set())
        subs.discard(sub)
        if not subs:
            self.subscribers.pop(sub.name, None)
        if self.subscribers:
            return False
        for task in (self.task, self.sweeper):
            if task is not None:
                task.cancel()
        return True

    def _tell(self, name: str, change: Change | BaseException) -> None:
        for sub in self.subscribers.get(name, ()):
            sub.put(change)

    async def _list(self) -> str:
        """Start a list and return its resourceVersion once the first page is in; the other
        pages follow in the list's task (:class:`_Relist`)."""
        self._drop_relist()
        count_triggerer("triggerer.watch_relists")
        relist = self._relist = _Relist.start(self._read_pages, name=f"{self.task_name}-list")
        return await relist.first_page()  # by then a one-page list may be over, and dropped

    async def _read_pages(self, relist: _Relist) -> None:
        pages = self.hook.list_pages(
            self.resource, self.versions[0], self.namespace, self.resource.label_selector
        )
        async for items, version in pages:
            if not relist.version.done():
                relist.version.set_result(version)
            for obj in items:  # as the resource keeps them
                key = self.resource.key(obj)
                if key is None or key in relist.touched:
                    continue
                relist.seen.add(key)
                if not self._same(self.cache.get(key), obj):
                    self.cache[key] = obj
                    self._tell(key, Change("MODIFIED", obj))
        # The list is whole: what it lacks (and the watch has not brought) is gone.
        for key in [k for k in self.cache if k not in relist.seen and k not in relist.touched]:
            del self.cache[key]
        self._relist, self.synced = None, True
        for name in list(self.subscribers):
            if name not in self.cache:
                self._tell(name, Change(ABSENT, None))

    def _drop_relist(self) -> None:
        """Forget an unfinished list: it starts over, and the watch with it."""
        if self._relist is not None:
            self._relist.cancel()
            self._relist, self.version = None, None

    @staticmethod
    def _same(a: dict[str, Any] | None, b: dict[str, Any]) -> bool:
        return (
            a is not None and a["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"]
        )

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        name = self.resource.key(obj)
        if name is None:
            return
        obj = self.resource.trim(obj)
        if self._relist is not None:
            self._relist.touched.add(name)
        if kind == "DELETED":
            self.cache.pop(name, None)
        else:
            self.cache[name] = obj
        self._tell(name, Change(kind, obj))

    @property
    def task_name(self) -> str:
        return f"{self.resource.plural}-informer-{self.namespace}"

    async def _run(self) -> None:
        try:
            while True:
                if (failed := await self._round()) is not None:
                    return self._fail(failed)
        finally:
            self._drop_relist()

    async def _round(self) -> ApiUnavailable | None:
        """One list (when needed) and one watch, or its error handled; an error to give all
        waiters ends the loop."""
        listed = False  # this round listed (a refused watch then is no passing state)
        try:
            if self.version is None or self.polling:
                self.version = await self._list()
                listed = True
                self.backoff.reset()
            if self.polling:
                await self._whole_list()
                await asyncio.sleep(self.poll_interval)
                return None
            await self._watch_while_listing()
            self.backoff.reset()  # the server closed the watch; open the next one
        except asyncio.CancelledError:
            raise
        except Exception as err:
            from_list = self.version is None or (
                self._relist is not None and self._relist.raised(err)
            )
            self._drop_relist()
            status = api_status(err)
            what = f"{self.resource.kind}s in {self.namespace}"
            if status == 410:
                log.info("The watch of %s expired (410); listing again", what)
                self.version = None
            elif status == 404 and from_list and len(self.versions) > 1:
                self.versions.pop(0)  # this version is not served here: an older one is
                self.version = None
            elif status in (403, 405) and listed and not from_list and not self.polling:
                # The watch just after a list: RBAC lets us list but not watch.
                log.warning("Watching %s is not allowed (%s); polling instead", what, status)
                self.polling = True
            elif is_transient(err) or (status in (401, 403) and self.synced):
                # A refusal after a list went through is taken as passing, within the
                # budget: a restarted kube-apiserver refused the triggers' resumed watch
                # and relist (403, then 429) until its RBAC cache had synced, with the
                # same Role bound (bench/real_apiserver_watch.py).
                try:
                    await self.backoff.wait(err)
                except ApiUnavailable as gave_up:
                    return gave_up
            else:
                return ApiUnavailable(f"list/watch of {what} failed: {explain(err)}")
        return None

    async def _whole_list(self) -> None:
        if self._relist is not None:
            await self._relist.task

    async def _watch_while_listing(self) -> None:
        """The watch from ``self.version``, with a list's other pages read alongside; the
        first error of either ends both."""
        relist = self._relist
        if relist is None:
            return await self._watch()
        watch = asyncio.create_task(self._watch(), name=f"{self.task_name}-watch")
        try:
            both = {watch, relist.task}
            done, _ = await asyncio.wait(both, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # the first error
            await asyncio.gather(*both)  # the other: the watch goes on after the list ends
        finally:
            watch.cancel()

    async def _watch(self) -> None:
        assert self.version is not None
        async for kind, obj in self.hook.watch_objects(
            self.resource,
            self.versions[0],
            self.namespace,
            self.version,
            label_selector=self.resource.label_selector,
            timeout_seconds=WATCH_TIMEOUT,
        ):
            self.backoff.reset()
            self.version = obj["metadata"]["resourceVersion"]
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._apply(kind, obj)

    def _fail(self, err: ApiUnavailable) -> None:
        log.log(logging.WARNING if self.resource.optional else logging.ERROR, "%s", err)
        for name in list(self.subscribers):
            self._tell(name, err)


_informers: PerLoop[tuple[KubernetesCluster, str, Resource], Informer] = PerLoop()


@contextlib.asynccontextmanager
async def subscribe(
    cluster: KubernetesCluster,
    namespace: str,
    name: str,
    *,
    resource: Resource = JOBSETS,
    poll_interval: float = 10.0,
    retry_budget: float = 600.0,
    connection_extras: dict[str, Any] | None = None,
) -> AsyncIterator[Subscription]:
    """Wait on the object ``name`` (its resource's key) through the informer for (cluster,
    namespace, resource) in this event loop, starting it if needed (the first subscriber's
    settings apply) and stopping it when its last subscriber leaves."""
    informer = _informers.get(
        (cluster, namespace, resource),
        lambda: Informer(
            cluster.async_hook(connection_extras),
            namespace,
            resource=resource,
            poll_interval=poll_interval,
            retry_budget=retry_budget,
        ).start(),
        lambda informer: informer.running,
    )
    sub = informer.subscribe(name)
    try:
        yield sub
    finally:
        if informer.unsubscribe(sub):
            _informers.forget((cluster, namespace, resource), informer)
