"""Could ``JobSetTrigger`` stand on Airflow 3.3's shared streams instead of our informer?

Both share one upstream stream (a JobSet watch per cluster and namespace) between many
waiting triggers. They differ in how an event reaches its waiter and in what a waiter that
subscribes late sees. This bench feeds the same events to N waiters, one JobSet each, through
``airflow.triggers.shared_stream.SharedStreamManager`` (the triggerer's own manager) and through
``triggers.informer.Informer``, and reports:

- CPU per delivered event: the shared stream broadcasts every raw event to every subscriber,
  whose ``filter_shared_stream`` drops the ones for other JobSets (O(N) per event); the
  informer hands each event to the waiters of that one name (O(1));
- waiters force-failed: a subscriber whose queue holds more than
  ``[triggerer] shared_stream_subscriber_queue_size`` (1,024) unread events is failed, and a
  relist after a 410 yields one event per JobSet back to back;
- a late waiter: one subscribing after its JobSet already finished (a task resuming after a
  triggerer restart). The shared stream snapshots subscribers at fan-out, so it never sees it;
  the informer replays its cache to every new subscriber.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

try:
    from airflow.triggers.base import BaseEventTrigger, TriggerEvent
    from airflow.triggers.shared_stream import SharedStreamManager
except ImportError:  # Airflow 3.1/3.2 have no shared streams
    print("airflow.triggers.shared_stream is absent (Airflow < 3.3); nothing to compare")
    sys.exit(0)

import structlog

from airflow_provider_jax.triggers.watch.informer import ABSENT, Informer
from bench.targets import Targets, quick

# One overflow warning per failed waiter would drown the table; the table counts them.
structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))

FEED: asyncio.Queue[Any]  # the upstream watch, fed by the bench; one per run


def jobset(name: str, rv: int, done: bool) -> dict[str, Any]:
    conditions = [{"type": "Completed", "status": "True"}] if done else []
    return {
        "metadata": {"name": name, "resourceVersion": str(rv)},
        "status": {"conditions": conditions},
    }


def events(n: int, updates: int) -> list[tuple[str, dict[str, Any]]]:
    """A relist burst (one event per JobSet), ``updates`` status changes each, then the end."""
    out, rv = [], 0
    for round_ in range(updates + 2):
        for i in range(n):
            rv += 1
            out.append(("MODIFIED", jobset(f"js-{i}", rv, done=round_ == updates + 1)))
    return out


def finished(obj: dict[str, Any] | None) -> bool:
    return bool(obj and obj["status"]["conditions"])


class WatchTrigger(BaseEventTrigger):
    """A JobSet waiter on the shared stream: one key per namespace, a filter by name."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{__name__}.WatchTrigger", {"name": self.name}

    def shared_stream_key(self) -> str:
        return "cluster/namespace"

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        while (item := await FEED.get()) is not None:
            yield item
        await asyncio.Event().wait()  # a stream runs for its group's lifetime

    async def filter_shared_stream(self, stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for _kind, obj in stream:
            if obj["metadata"]["name"] == self.name and finished(obj):
                yield TriggerEvent({"name": self.name})
                return

    async def run(self) -> AsyncIterator[TriggerEvent]:  # pragma: no cover - not used here
        raise NotImplementedError


async def via_shared_stream(
    n: int, feed: list[tuple[str, dict[str, Any]]], paced: bool
) -> dict[str, Any]:
    global FEED
    FEED = asyncio.Queue()
    manager, done, failed = SharedStreamManager(), 0, 0

    async def wait(i: int) -> None:
        nonlocal done, failed
        trigger = WatchTrigger(f"js-{i}")
        try:
            async for _ in trigger.filter_shared_stream(
                manager.subscribe(trigger_id=i, trigger=trigger, key=trigger.shared_stream_key())
            ):
                done += 1
        except Exception:
            failed += 1

    waiters = [asyncio.create_task(wait(i)) for i in range(n)]
    await asyncio.sleep(0)
    cpu = time.process_time()
    for item in feed:
        FEED.put_nowait(item)
        if paced:
            await asyncio.sleep(0)
    await asyncio.wait(waiters, timeout=60)
    cpu = time.process_time() - cpu
    # A waiter subscribing after its JobSet finished (the feed is over): does it ever hear?
    late = WatchTrigger("js-0")
    stream = late.filter_shared_stream(
        manager.subscribe(trigger_id=n, trigger=late, key="cluster/namespace")
    )
    try:
        late_seen = await asyncio.wait_for(anext(stream, None), 2) is not None
    except TimeoutError:
        late_seen = False
    await manager.stop_all()
    return {"cpu": cpu, "done": done, "failed": failed, "late_seen": late_seen}


async def via_informer(
    n: int, feed: list[tuple[str, dict[str, Any]]], paced: bool
) -> dict[str, Any]:
    informer = Informer(hook=None, namespace="namespace")  # type: ignore[arg-type]
    informer.synced, done = True, 0

    async def wait(i: int) -> None:
        nonlocal done
        sub = informer.subscribe(f"js-{i}")
        while not finished((await sub.next()).obj):
            pass
        done += 1

    informer.cache.clear()
    waiters = [asyncio.create_task(wait(i)) for i in range(n)]
    await asyncio.sleep(0)
    cpu = time.process_time()
    for kind, obj in feed:
        informer._apply(kind, obj)
        if paced:
            await asyncio.sleep(0)
    await asyncio.wait(waiters, timeout=60)
    cpu = time.process_time() - cpu
    change = await informer.subscribe("js-0").next()
    return {"cpu": cpu, "done": done, "failed": 0, "late_seen": change.type != ABSENT}


def main() -> None:
    """Events arrive one per loop turn (``paced``, a quiet watch) or back to back (``burst``,
    a relist or a busy watch chunk)."""
    print(
        f"{'waiters':>8} {'events':>7} {'arrival':>7}  {'mechanism':<13} {'CPU s':>6} "
        f"{'µs/event':>8} {'finished':>8} {'failed':>6}  late waiter sees the end"
    )
    targets = Targets()  # ours: every waiter finishes, none is failed, a late one sees the end
    for n in quick((100, 1000), (100,)):
        feed = events(n, updates=3)
        for paced in (True, False):
            for label, run in (("informer", via_informer), ("shared stream", via_shared_stream)):
                r = asyncio.run(run(n, feed, paced))
                print(
                    f"{n:>8} {len(feed):>7} {'paced' if paced else 'burst':>7}  {label:<13} "
                    f"{r['cpu']:>6.2f} {r['cpu'] / len(feed) * 1e6:>8.0f} {r['done']:>8} "
                    f"{r['failed']:>6}  {'yes' if r['late_seen'] else 'NO'}"
                )
                if label == "informer":
                    what = f"informer, {n} waiters, {'paced' if paced else 'burst'}"
                    targets.at_least(f"{what}: waiters finished", r["done"], n)
                    targets.at_most(f"{what}: waiters failed", r["failed"], 0)
                    targets.at_least(f"{what}: a late waiter sees the end", r["late_seen"], 1)
    targets.exit()


if __name__ == "__main__":
    main()
