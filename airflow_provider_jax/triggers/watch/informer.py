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
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryError, retry_if_exception, stop_after_delay

from airflow_provider_jax.hooks.api_errors import api_status, explain, is_transient
from airflow_provider_jax.hooks.cluster import KubernetesCluster
from airflow_provider_jax.hooks.jobset import AsyncJobSetHook
from airflow_provider_jax.hooks.resources import JOBSETS, Resource
from airflow_provider_jax.hooks.retry import ExponentialJitter
from airflow_provider_jax.triggers.watch.per_loop import PerLoop

log = logging.getLogger(__name__)
T = TypeVar("T")

WATCH_TIMEOUT = 300  # seconds a watch stays open before it is renewed
ABSENT = "ABSENT"  # not in a fresh list: deleted while we were not watching, or never there


class ApiUnavailable(Exception):
    """The Kubernetes API kept failing past the retry budget, or refused us outright."""


class Backoff:
    """Backoff within a time budget counted from the first failure since the last
    :meth:`reset`. A hand-held loop rather than a tenacity ``Retrying``, because a watch that
    delivers events between failures is progress, and must start the budget over."""

    def __init__(self, budget: float, first: float = 1.0, cap: float = 30.0) -> None:
        self.budget, self.wait_for = budget, ExponentialJitter(first, cap)
        self.reset()

    def reset(self) -> None:
        self.failures = 0
        self.since: float | None = None

    async def wait(self, err: BaseException) -> None:
        """Sleep before the next try, or raise :class:`ApiUnavailable` once over budget."""
        now = time.monotonic()
        self.since = self.since or now
        if now - self.since >= self.budget:
            raise _gave_up(now - self.since, err) from err
        self.failures += 1
        delay = self.wait_for.delay(self.failures, err)
        await asyncio.sleep(min(delay, self.budget - (now - self.since)))


def _gave_up(seconds: float, err: BaseException) -> ApiUnavailable:
    return ApiUnavailable(f"the Kubernetes API has been failing for {seconds:.0f}s: {explain(err)}")


async def with_retries(call: Callable[[], Awaitable[T]], budget: float) -> T:
    """``call()``, retried on transient API errors until they have lasted ``budget`` seconds."""
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_delay(budget),
        wait=ExponentialJitter(),
        before_sleep=lambda state: log.warning(
            "Kubernetes API call failed, retrying: %s", explain(state.outcome.exception())
        ),
    )

    async def attempt() -> T:  # tenacity awaits only coroutine functions, not lambdas
        return await call()

    try:
        return await retrying(attempt)
    except RetryError as gave_up:
        err = gave_up.last_attempt.exception()
        raise _gave_up(budget, err) from err


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

    def __init__(self, name: str, hook: AsyncJobSetHook) -> None:
        self.name, self.hook = name, hook
        self._queue: asyncio.Queue[Change | BaseException] = asyncio.Queue()

    def put(self, item: Change | BaseException) -> None:
        self._queue.put_nowait(item)

    async def next(self) -> Change:
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item


class Informer:
    """The shared list+watch loop; use it through :func:`subscribe`."""

    def __init__(
        self,
        hook: AsyncJobSetHook,
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
        self.polling = False
        self.subscribers: dict[str, set[Subscription]] = {}
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def start(self) -> Informer:
        name = f"{self.resource.plural}-informer-{self.namespace}"
        self.task = asyncio.create_task(self._run(), name=name)
        return self

    def subscribe(self, name: str) -> Subscription:
        sub = Subscription(name, self.hook)
        self.subscribers.setdefault(name, set()).add(sub)
        if self.synced:
            obj = self.cache.get(name)
            sub.put(Change("ADDED", obj) if obj is not None else Change(ABSENT, None))
        return sub

    def unsubscribe(self, sub: Subscription) -> bool:
        """Drop ``sub``; True when it was the last one and the informer has stopped."""
        subs = self.subscribers.get(sub.name, set())
        subs.discard(sub)
        if not subs:
            self.subscribers.pop(sub.name, None)
        if self.subscribers:
            return False
        if self.task is not None:
            self.task.cancel()
        return True

    def _tell(self, name: str, change: Change | BaseException) -> None:
        for sub in self.subscribers.get(name, ()):
            sub.put(change)

    async def _list(self) -> str:
        items, resource_version = await self.hook.list_objects(
            self.resource, self.versions[0], self.namespace, self.resource.label_selector
        )
        fresh = {}
        for obj in items:  # as the resource keeps them
            if (key := self.resource.key(obj)) is not None:
                fresh[key] = obj
        old, self.cache, self.synced = self.cache, fresh, True
        for name in list(self.subscribers):
            obj = fresh.get(name)
            if obj is None:
                self._tell(name, Change(ABSENT, None))
            elif not self._same(old.get(name), obj):
                self._tell(name, Change("MODIFIED", obj))
        return resource_version

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
        if kind == "DELETED":
            self.cache.pop(name, None)
        else:
            self.cache[name] = obj
        self._tell(name, Change(kind, obj))

    async def _run(self) -> None:
        backoff = Backoff(self.retry_budget)
        resource_version: str | None = None
        while True:
            listed = False  # this round listed (a refused watch then is no passing state)
            try:
                if resource_version is None or self.polling:
                    resource_version = await self._list()
                    listed = True
                    backoff.reset()
                if self.polling:
                    await asyncio.sleep(self.poll_interval)
                    continue
                async for kind, obj in self.hook.watch_objects(
                    self.resource,
                    self.versions[0],
                    self.namespace,
                    resource_version,
                    label_selector=self.resource.label_selector,
                    timeout_seconds=WATCH_TIMEOUT,
                ):
                    backoff.reset()
                    resource_version = obj["metadata"]["resourceVersion"]
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self._apply(kind, obj)
                backoff.reset()  # the server closed the watch; open the next one
            except asyncio.CancelledError:
                raise
            except Exception as err:
                status = api_status(err)
                what = f"{self.resource.kind}s in {self.namespace}"
                if status == 410:
                    log.info("The watch of %s expired (410); listing again", what)
                    resource_version = None
                elif status == 404 and resource_version is None and len(self.versions) > 1:
                    self.versions.pop(0)  # this version is not served here: an older one is
                elif status in (403, 405) and listed and not self.polling:
                    # The watch just after a list: RBAC lets us list but not watch.
                    log.warning("Watching %s is not allowed (%s); polling instead", what, status)
                    self.polling = True
                elif is_transient(err) or (status in (401, 403) and self.synced):
                    # A refusal after a list went through is taken as passing, within the
                    # budget: a restarted kube-apiserver refused the triggers' resumed watch
                    # and relist (403, then 429) until its RBAC cache had synced, with the
                    # same Role bound (bench/real_apiserver_watch.py).
                    try:
                        await backoff.wait(err)
                    except ApiUnavailable as gave_up:
                        return self._fail(gave_up)
                else:
                    return self._fail(
                        ApiUnavailable(f"list/watch of {what} failed: {explain(err)}")
                    )

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
