"""The API server's storage: objects, a global resourceVersion, and watchable history.

It behaves like etcd behind kube-apiserver where clients can tell: every write bumps one
counter, a watch from version N replays what happened after N, and once history before N has
been compacted the watch gets 410 Gone and the client must list again.
"""

from __future__ import annotations

import asyncio
import bisect
import pickle
import re
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Selector = Callable[[Mapping[str, str]], bool]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of plain JSON data, several times faster than ``copy.deepcopy``."""
    return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))


class Expired(Exception):
    """A watch asked for history that has been compacted (HTTP 410)."""


@dataclass(frozen=True)
class Event:
    rv: int
    kind: str
    namespace: str
    type: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]


@dataclass(eq=False)
class Watcher:
    kind: str
    namespace: str
    selector: Selector
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)

    def wants(self, event: Event) -> bool:
        return (
            event.kind == self.kind
            and event.namespace == self.namespace
            and self.selector(labels_of(event.obj))
        )


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


_TERM = re.compile(
    r"^\s*(!?)([\w./-]+)\s*(?:(==|=|!=)\s*([\w./-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$"
)


# The label the store indexes: every JobSet's pods carry it, and a trigger's pod list selects
# on it. Without the index, a list scans every object: at N = 10,000 JobSets (30,000 objects),
# a pod list per job kept the emulator's loop busy for minutes (bench.triggerer_scale).
INDEXED_LABEL = "jobset.sigs.k8s.io/jobset-name"


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: a predicate on labels, and its ``key=value`` terms."""

    terms: tuple[Callable[[Mapping[str, str]], bool], ...]
    equals: Mapping[str, str]

    def __call__(self, labels: Mapping[str, str]) -> bool:
        return all(term(labels) for term in self.terms)


def parse_selector(text: str | None) -> Selector:
    """A label selector (``a=b,c!=d,e,!f,g in (x,y)``) as a predicate on labels."""
    terms: list[Callable[[Mapping[str, str]], bool]] = []
    equals: dict[str, str] = {}
    for part in re.split(r",(?![^()]*\))", text or ""):
        if not part.strip():
            continue
        match = _TERM.match(part)
        if not match:
            raise ValueError(f"unable to parse requirement: {part!r}")
        neg, key, op, value, set_op, values = match.groups()
        if op in ("=", "=="):
            equals[key] = value
            terms.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif op == "!=":
            terms.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif set_op:
            options = {v.strip() for v in values.split(",")}
            inside = set_op == "in"
            terms.append(lambda labels, k=key, o=options, i=inside: (labels.get(k) in o) == i)
        else:
            terms.append(lambda labels, k=key, n=bool(neg): (k in labels) != n)
    return LabelSelector(tuple(terms), equals)


class Store:
    """Objects by (kind, namespace, name), with a bounded event history for watches."""

    def __init__(self, history: int = 10_000) -> None:
        self.rv = 0
        self.compacted = 0  # history at or below this version is gone
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        # (kind, namespace, INDEXED_LABEL's value) -> the keys of the objects with it
        self._indexed: dict[tuple[str, str, str], set[tuple[str, str, str]]] = {}
        # (kind, namespace) -> its names, sorted: a page of a list starts where the last one
        # ended, instead of scanning every object.
        self._names: dict[tuple[str, str], list[str]] = {}
        self.history: deque[Event] = deque()
        self.history_limit = history
        self.watchers: set[Watcher] = set()

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        obj = self.objects.get((kind, namespace, name))
        return _copy(obj) if obj is not None else None

    def list(
        self,
        kind: str,
        namespace: str,
        selector: Selector = lambda _: True,
        *,
        after: str = "",
        limit: int = 0,
    ) -> tuple[list[dict[str, Any]], int]:
        """The matching objects by name (those named after ``after``; at most ``limit``, 0:
        all), copied, and the current resourceVersion."""
        value = getattr(selector, "equals", {}).get(INDEXED_LABEL)
        if value is None:
            names = self._names.get((kind, namespace), [])
        else:
            names = sorted(key[2] for key in self._indexed.get((kind, namespace, value), ()))
        found: list[dict[str, Any]] = []
        for name in names[bisect.bisect_right(names, after) :]:
            obj = self.objects[(kind, namespace, name)]
            if selector(labels_of(obj)):
                found.append(_copy(obj))
                if len(found) == limit:
                    break
        return found, self.rv

    def iter(self, kind: str) -> Iterator[dict[str, Any]]:
        return (obj for (k, _, _), obj in list(self.objects.items()) if k == kind)

    def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        key = (kind, meta["namespace"], meta["name"])
        if key in self.objects:
            raise KeyError(key)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now(), generation=1)
        return self._write(key, obj, "ADDED")

    def update(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return self._write((kind, meta["namespace"], meta["name"]), obj, "MODIFIED")

    def remove(
        self, kind: str, namespace: str, name: str, uid: str | None = None
    ) -> dict[str, Any] | None:
        """Remove the object of that name (only if its uid is ``uid``, when given)."""
        current = self.objects.get((kind, namespace, name))
        if uid is not None and (current is None or current["metadata"].get("uid") != uid):
            return None
        obj = self.objects.pop((kind, namespace, name), None)
        if obj is not None:
            self._index((kind, namespace, name), obj, None)
            self._name((kind, namespace, name), present=False)
            self._emit(kind, obj, "DELETED")
        return obj

    def _write(self, key: tuple[str, str, str], obj: dict[str, Any], kind_of_change: str) -> dict:
        self._index(key, self.objects.get(key), obj)
        self._name(key, present=True)
        self.objects[key] = obj
        self._emit(key[0], obj, kind_of_change)
        return _copy(obj)

    def _index(
        self, key: tuple[str, str, str], old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        """Move ``key`` in the index from ``old``'s indexed label value to ``new``'s."""
        was = labels_of(old).get(INDEXED_LABEL) if old is not None else None
        now = labels_of(new).get(INDEXED_LABEL) if new is not None else None
        if was == now:
            return
        if was is not None:
            self._indexed[(key[0], key[1], was)].discard(key)
        if now is not None:
            self._indexed.setdefault((key[0], key[1], now), set()).add(key)

    def _name(self, key: tuple[str, str, str], *, present: bool) -> None:
        names = self._names.setdefault(key[:2], [])
        at = bisect.bisect_left(names, key[2])
        there = at < len(names) and names[at] == key[2]
        if present and not there:
            names.insert(at, key[2])
        elif there and not present:
            del names[at]

    def _emit(self, kind: str, obj: dict[str, Any], change: str) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        event = Event(self.rv, kind, obj["metadata"]["namespace"], change, _copy(obj))
        self.history.append(event)
        while len(self.history) > self.history_limit:
            self.compacted = self.history.popleft().rv
        for watcher in list(self.watchers):
            if watcher.wants(event):
                watcher.queue.put_nowait(event)

    def clear(self) -> None:
        """Forget every object (not the resourceVersion: it only grows)."""
        self.objects.clear()
        self._indexed.clear()
        self._names.clear()

    def compact(self) -> None:
        """Forget all history, as etcd compaction does: older resourceVersions now get 410."""
        self.history.clear()
        self.compacted = self.rv

    def watch(
        self, kind: str, namespace: str, selector: Selector, resource_version: str | None
    ) -> Watcher:
        """Register a watcher primed with what it missed since ``resource_version``; with no
        version (or "0"), with ADDED events for everything there now, as the API server does."""
        watcher = Watcher(kind, namespace, selector)
        if resource_version in (None, "", "0"):
            for obj in self.list(kind, namespace, selector)[0]:
                rv = int(obj["metadata"]["resourceVersion"])
                watcher.queue.put_nowait(Event(rv, kind, namespace, "ADDED", obj))
        else:
            since = int(resource_version)
            if since < self.compacted:
                raise Expired(f"too old resource version: {since} ({self.compacted})")
            for event in self.history:
                if event.rv > since and watcher.wants(event):
                    watcher.queue.put_nowait(event)
        self.watchers.add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
