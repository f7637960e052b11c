"""One listing of an Orbax checkpoint directory per poll, shared by every watcher of it, and
the record of what each watcher has announced.

The triggerer runs one :class:`CheckpointDirStream` per directory (Airflow 3.3's shared
streams, in ack mode). Each poll is one :class:`StepListing`; a watcher asks it for the first
finalized step above its cursor, and the answer for a step is looked up once per listing
however many watchers ask. The producer's ``advance`` runs only after Airflow confirmed the
watchers' events are stored in the metadata database; only then is each watcher's cursor
moved, so a crash before that point announces the step again rather than never.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.checkpoints import (
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    GcsLocation,
    StorageUnavailableError,
)
from airflow_provider_jax.checkpoints.gcs_drivers import agcs_fetcher
from airflow_provider_jax.runtime.orbax_steps import (
    ListPage,
    ListRequest,
    arun_search,
    check_gcs_step,
    check_local_step,
    list_gcs_steps,
    list_local_steps,
)

log = logging.getLogger(__name__)

CURSOR_KEY_PREFIX, OWNER_KEY_PREFIX = "orbax_announced:", "orbax_watcher:"
_MAX_KEY = 512  # the asset state store's key column


def cursor_key(checkpoint_dir: str, prefix: str = CURSOR_KEY_PREFIX) -> str:
    """The asset state store key of the newest step announced from ``checkpoint_dir`` (or,
    with ``OWNER_KEY_PREFIX``, of the watcher that announces from it now)."""
    key = prefix + checkpoint_dir
    if len(key) <= _MAX_KEY:
        return key
    return prefix + "sha256:" + hashlib.sha256(checkpoint_dir.encode()).hexdigest()


def _accessors(store: Any) -> list[Any]:
    """One state accessor per asset this trigger serves. Several assets with identical watchers
    share one trigger row; Airflow 3.3 offers no public way to reach each of their stores
    (apache/airflow#71460 proposes iteration), so fall back to the mapping it keeps."""
    if store is None:
        return []
    if hasattr(type(store), "__iter__"):
        return list(store)
    return [*getattr(store, "_by_name", {}).values(), *getattr(store, "_by_uri", {}).values()]


@dataclass
class Cursor:
    """The newest step a watcher announced, kept in the asset state store of each asset it
    serves, so a restarted or another triggerer goes on from there."""

    store: Any
    checkpoint_dir: str
    floor: int  # the cursor before anything was announced: min_step - 1

    async def load(self) -> int:
        """The newest of the stored cursors. One event goes to every asset of the trigger, so
        a commit that reached only some of them still stands for all."""
        key = cursor_key(self.checkpoint_dir)
        stored = [await accessor.aget(key) for accessor in _accessors(self.store)]
        steps = [
            v["step"] for v in stored if isinstance(v, dict) and isinstance(v.get("step"), int)
        ]
        return max([self.floor, *steps])

    async def commit(self, found: FinalizedStep) -> None:
        """Move the cursor forward only: a watcher that lost the directory to another
        triggerer may still commit what it announced before that."""
        key, value = cursor_key(self.checkpoint_dir), {"step": found.step, "path": found.path}
        for accessor in _accessors(self.store):
            stored = await accessor.aget(key)
            if not (isinstance(stored, dict) and stored.get("step", -1) >= found.step):
                await accessor.aset(key, value)

    async def claim(self, token: str) -> None:
        """Say that the watcher ``token`` announces from now on; one that ran before (a
        triggerer thought dead that is not) stops at its next announcement."""
        for accessor in _accessors(self.store):
            await accessor.aset(cursor_key(self.checkpoint_dir, OWNER_KEY_PREFIX), token)

    async def owns(self, token: str) -> bool:
        key = cursor_key(self.checkpoint_dir, OWNER_KEY_PREFIX)
        return all([await accessor.aget(key) == token for accessor in _accessors(self.store)])


StepCheck = Callable[[int, str], Awaitable[FinalizedStep | None]]


@dataclass
class StepListing:
    """The step directories of one poll, ascending, and which watchers announced what from it
    (filled in by the watchers, committed by the producer once Airflow stored their events)."""

    steps: Sequence[tuple[int, str]]
    check: StepCheck
    announced: dict[int, tuple[Cursor, FinalizedStep]] = field(default_factory=dict)

    async def first_finalized_after(self, cursor: int) -> FinalizedStep | None:
        """The oldest finalized step newer than ``cursor``: one per poll, so that Airflow,
        which merges asset events queued before it creates a run, sees them one at a time."""
        for step, name in self.steps:
            if step > cursor and (found := await self.check(step, name)) is not None:
                return found
        return None


class CheckpointDirStream:
    """Polls one checkpoint directory every ``poll_interval`` seconds.

    On GCS a poll is one request per 1,000 step directories, plus one per step a watcher
    needs checked (each step once per poll, and never again once finalized). Locally the
    same shape costs no requests: one ``scandir`` of the directory, one per step checked.
    """

    def __init__(self, query: CheckpointQuery, poll_interval: float) -> None:
        self.query = query
        self.poll_interval = poll_interval
        self._finalized: dict[str, FinalizedStep] = {}  # step name -> once seen finalized

    async def listings(self) -> AsyncIterator[StepListing]:
        """Yield a listing per poll, forever; storage errors are logged and polled through."""
        if self.query.is_gcs:
            async with agcs_fetcher(self.query) as fetch:
                async for listing in self._every_poll(lambda: self._gcs_listing(fetch)):
                    yield listing
        else:
            async for listing in self._every_poll(self._local_listing):
                yield listing

    async def _every_poll(
        self, list_once: Callable[[], Awaitable[StepListing]]
    ) -> AsyncIterator[StepListing]:
        where = self.query.checkpoint_dir
        while True:
            try:
                yield await list_once()
            except CheckpointDirError as exc:
                log.error("Cannot list %s, will try again: %s", where, exc)
            except StorageUnavailableError as exc:
                log.warning("Could not list %s, will try again: %s", where, exc)
            await asyncio.sleep(self.poll_interval)

    async def _local_listing(self) -> StepListing:
        where = self.query.checkpoint_dir
        steps = await asyncio.to_thread(list_local_steps, where, self.query.name_format)

        async def check(step: int, name: str) -> FinalizedStep | None:
            return await asyncio.to_thread(check_local_step, where, steps, step, name)

        return StepListing(steps, check)

    async def _gcs_listing(
        self, fetch: Callable[[ListRequest], Awaitable[ListPage]]
    ) -> StepListing:
        location = GcsLocation.parse(self.query.checkpoint_dir)
        steps = await arun_search(list_gcs_steps(location, self.query.name_format, 0), fetch)
        present = {name for _, name in steps}
        self._finalized = {n: f for n, f in self._finalized.items() if n in present}
        checked: dict[str, asyncio.Task[FinalizedStep | None]] = {}

        async def check(step: int, name: str) -> FinalizedStep | None:
            if name in self._finalized:
                return self._finalized[name]
            if name not in checked:  # one request per step and poll, however many watchers
                checked[name] = asyncio.ensure_future(
                    arun_search(check_gcs_step(location, step, name), fetch)
                )
            try:
                found = await checked[name]
            except (CheckpointDirError, StorageUnavailableError) as exc:
                # Like a failed listing: not this poll. Raised into the watcher, it would end
                # the trigger over one step's transient 503.
                log.warning("Could not check step %s, will try again: %s", name, exc)
                return None
            if found is not None:
                self._finalized[name] = found
            return found

        return StepListing(steps, check)


async def commit_announced(listings: Sequence[StepListing]) -> None:
    """Move each watcher's cursor to what it announced from ``listings``."""
    for listing in listings:
        for cursor, found in listing.announced.values():
            await cursor.commit(found)
