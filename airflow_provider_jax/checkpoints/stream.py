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
import math
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.checkpoints import (
    DEFAULT_RETRY,
    CheckpointDirError,
    CheckpointQuery,
    FinalizedStep,
    StorageUnavailableError,
)
from airflow_provider_jax.stores import store
from airflow_provider_jax.stores.driver import StepCheck, StepPoll

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


MINE, TAKEN, RETAKEN = "mine", "taken", "retaken"


@dataclass
class Ownership:
    """Which copy of a watcher announces from a directory: its token, and when it last said so.

    Airflow runs one copy per trigger, but a triggerer thought dead (a stalled heartbeat) can
    still run an old one for a moment, and its claim can land after the new copy's. So the
    owner says it is alive every third of ``lease`` seconds, and a copy whose token was
    overwritten takes the directory back once that record has been silent for ``lease``: a
    cancelled copy stops saying so, and the copy Airflow kept would otherwise wait forever.
    """

    cursor: Cursor
    token: str
    lease: float  # seconds: more than the triggerer's health threshold plus a poll or two
    _said_at: float = -math.inf  # monotonic, when this copy last wrote its record

    def _key(self) -> str:
        return cursor_key(self.cursor.checkpoint_dir, OWNER_KEY_PREFIX)

    async def claim(self) -> None:
        """Say that this copy announces from now on (and still does)."""
        record = {"token": self.token, "at": time.time()}
        for accessor in _accessors(self.cursor.store):
            await accessor.aset(self._key(), record)
        self._said_at = time.monotonic()

    async def check(self) -> str:
        """``MINE`` (refreshed when due), ``TAKEN`` by a copy that is alive, or ``RETAKEN``
        here from one silent for longer than the lease."""
        records = [await accessor.aget(self._key()) for accessor in _accessors(self.cursor.store)]
        if all(_owner(record)[0] == self.token for record in records):
            if time.monotonic() - self._said_at >= self.lease / 3:
                await self.claim()
            return MINE
        newest = max(_owner(record)[1] for record in records)
        if time.time() - newest <= self.lease:
            return TAKEN
        await self.claim()
        return RETAKEN


def _owner(record: Any) -> tuple[str | None, float]:
    """(token, when it was last said) of a stored owner record; a bare token (from before
    the owner said when) counts as long silent."""
    if isinstance(record, dict):
        at = record.get("at")
        return record.get("token"), float(at) if isinstance(at, int | float) else 0.0
    return (record if isinstance(record, str) else None), 0.0


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
    """Polls one checkpoint directory every ``poll_interval`` seconds, through its store's
    driver: on GCS a poll is one request per 1,000 step directories, plus one per step a
    watcher needs checked (each step once per poll, and never again once finalized); locally
    the same shape costs no requests: one ``scandir`` of the directory, one per step checked.
    """

    def __init__(self, query: CheckpointQuery, poll_interval: float) -> None:
        self.query = query
        self.poll_interval = poll_interval

    async def listings(self) -> AsyncIterator[StepListing]:
        """Yield a listing per poll, forever; storage errors are logged and polled through."""
        where, rules = self.query.location, self.query.rules
        driver = store(where, self.query.access)
        async with driver.step_polls(where, rules, DEFAULT_RETRY) as poll:
            async for listing in self._every_poll(poll):
                yield listing

    async def _every_poll(self, poll: StepPoll) -> AsyncIterator[StepListing]:
        where = self.query.checkpoint_dir
        while True:
            try:
                yield StepListing(*await poll())
            except CheckpointDirError as exc:
                log.error("Cannot list %s, will try again: %s", where, exc)
            except StorageUnavailableError as exc:
                log.warning("Could not list %s, will try again: %s", where, exc)
            await asyncio.sleep(self.poll_interval)


async def commit_announced(listings: Sequence[StepListing]) -> None:
    """Move each watcher's cursor to what it announced from ``listings``."""
    for listing in listings:
        for cursor, found in listing.announced.values():
            await cursor.commit(found)
