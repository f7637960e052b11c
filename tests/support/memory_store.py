"""A second store, for the tests only: objects in this process's memory, written
``mem://<bucket>/<key>``, listed a folder at a time as GCS lists them. It stands in for no
real store: it is a store of its own, and a test registers its two drivers (the pods' and the
Airflow side's) to show that a store is its drivers and one entry on each side, nothing more.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow_provider_jax.runtime.location import Location
from airflow_provider_jax.runtime.orbax_steps import (
    FinalizedStep,
    ListedObject,
    ListPage,
    ListRequest,
    StepRules,
    run_search,
    search,
)
from airflow_provider_jax.stores.driver import Access, RetryPolicy
from airflow_provider_jax.stores.listed import AsyncFetch, Fetch, ListedStore

SCHEME = "mem"
PAGE_SIZE = 2  # entries per listing page: every search follows pages


@dataclass(frozen=True)
class Stored:
    data: bytes
    updated: datetime


BUCKETS: dict[str, dict[str, Stored]] = {}  # bucket -> key -> object; a test empties it


def _bucket(where: Location) -> dict[str, Stored]:
    return BUCKETS.setdefault(where.bucket, {})


def _below(where: Location) -> dict[str, Stored]:
    return {k: v for k, v in _bucket(where).items() if k.startswith(where.prefix)}


def list_page(where: Location, request: ListRequest) -> ListPage:
    """One page of a listing with ``delimiter="/"``: the objects right under the prefix and
    the folders below it, in name order, ``PAGE_SIZE`` entries a page."""
    entries: dict[str, Stored | None] = {}
    for key, stored in _bucket(where).items():
        if key.startswith(request.prefix):
            head, slash, _ = key[len(request.prefix) :].partition("/")
            entries[request.prefix + head + slash] = None if slash else stored
    names = sorted(entries)
    start = int(request.page_token or 0)
    page = names[start : start + PAGE_SIZE]
    more = str(start + PAGE_SIZE) if start + PAGE_SIZE < len(names) else None
    objects = tuple(
        ListedObject(name, stored.updated) for name in page if (stored := entries[name]) is not None
    )
    return ListPage(objects, tuple(n for n in page if entries[n] is None), more)


class MemoryObjects:
    """The pods' driver (``runtime.stores.Store``)."""

    scheme = SCHEME
    name = "memory"
    form = f"{SCHEME}://<bucket>/<path>"
    shared = True
    fuse = False
    pathways_scratch = False

    def names(self, value: str) -> bool:
        return value.startswith(f"{SCHEME}://")

    def parse(self, value: str, argument: str) -> Location:
        bucket, _, key = value.removeprefix(f"{SCHEME}://").partition("/")
        if not bucket:
            raise ValueError(f"{argument} {value!r} names no bucket.")
        return Location(SCHEME, bucket, key.lstrip("/"))

    def host_path(self, location: Location) -> str | None:
        return None

    def exists(self, location: Location) -> bool:
        return location.key in _bucket(location) or bool(_below(location))

    def list(self, location: Location) -> list[str]:
        return sorted(key[len(location.prefix) :] for key in _below(location))

    def read(self, location: Location) -> bytes:
        if location.key not in _bucket(location):
            raise FileNotFoundError(str(location))
        return _bucket(location)[location.key].data

    def write(self, location: Location, data: bytes) -> None:
        _bucket(location)[location.key] = Stored(data, datetime.now(UTC))

    def data_path(self, location: Location, mount: str | None) -> str:
        """A copy in a new folder of this host's."""
        target = Path(tempfile.mkdtemp(prefix="airflow-jax-memory-"))
        for key, stored in _below(location).items():
            path = target / key[len(location.prefix) :]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(stored.data)
        return str(target)

    def newest_step(self, location: Location, rules: StepRules) -> FinalizedStep | None:
        return run_search(search(location, rules), lambda r: list_page(location, r))


class MemoryDriver(ListedStore):
    """The Airflow side's driver (``stores.Driver``): the search from :class:`ListedStore`."""

    scheme = SCHEME

    def __init__(self, access: Access) -> None:
        self.access = access

    def fetcher(self, where: Location, retry: RetryPolicy) -> Fetch:
        return lambda request: list_page(where, request)

    @contextlib.asynccontextmanager
    async def afetcher(self, where: Location, retry: RetryPolicy) -> AsyncIterator[AsyncFetch]:
        async def fetch(request: ListRequest) -> ListPage:
            return list_page(where, request)

        yield fetch

    def exists(self, where: Location) -> bool:
        return MemoryObjects().exists(where)

    def read(self, where: Location, max_bytes: int, check_size: Callable[[int], None]) -> bytes:
        data = MemoryObjects().read(where)
        check_size(len(data))
        return data[: max_bytes + 1]

    def write(self, where: Location, data: bytes) -> None:
        MemoryObjects().write(where, data)

    def upload(self, where: Location, path: Path) -> None:
        MemoryObjects().write(where, path.read_bytes())

    def holds_file_named(self, where: Location, start: str, most: int) -> bool:
        names = [key.rpartition("/")[2] for key in list(_below(where))[: most + 1]]
        return any(name.startswith(start) for name in names)

    def browser_url(self, where: Location) -> str:
        return f"memory://{where.bucket}/{where.prefix}"

    def dataset(self, where: Location) -> tuple[str, str]:
        return str(where.root), where.key.strip("/")


def registered(monkeypatch: Any) -> None:
    """Both drivers registered for ``mem://`` (undone with ``monkeypatch``), the store empty."""
    from airflow_provider_jax import stores
    from airflow_provider_jax.runtime import stores as runtime_stores

    BUCKETS.clear()
    monkeypatch.setitem(runtime_stores.DRIVERS, SCHEME, MemoryObjects())
    monkeypatch.setitem(stores.DRIVERS, SCHEME, MemoryDriver)
