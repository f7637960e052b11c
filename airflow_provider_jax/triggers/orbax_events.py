"""An ``AssetWatcher`` trigger: one asset event per newly finalized Orbax step, so evaluation
DAGs start on checkpoints with no sensor holding a slot.

Exactly once per step, across restarts and triggerers: what a watcher announced is kept in the
asset state store (the newest step, per checkpoint directory), and it is moved only after
Airflow confirmed the step's event is in the metadata database (shared-stream ack mode). A
restarted or another triggerer reads it and goes on from the next step. See docs/assets.md.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Hashable
from dataclasses import asdict
from typing import Any

from airflow.sdk import conf
from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_provider_jax.arguments import as_bool, positive_seconds
from airflow_provider_jax.checkpoints import CheckpointQuery, FinalizedStep, check_checkpoint_dir
from airflow_provider_jax.checkpoints.stream import (
    RETAKEN,
    TAKEN,
    CheckpointDirStream,
    Cursor,
    Ownership,
    StepListing,
    commit_announced,
)

STREAM_KEY = "airflow_provider_jax.orbax_checkpoints"
# Time for a previous owner's in-flight event to be stored and its cursor moved: two of the
# triggerer's one-second syncs, with room to spare.
TAKEOVER_SETTLE_SECONDS = 5.0


def _require_shared_streams() -> None:
    if not hasattr(BaseEventTrigger, "create_shared_stream_producer"):
        raise RuntimeError(
            "OrbaxCheckpointEventTrigger needs Airflow 3.3 or later: it keeps what it announced "
            "in the asset state store and moves it only once Airflow stored the event."
        )


class OrbaxCheckpointEventTrigger(BaseEventTrigger):
    """Fire once per newly finalized step of an Orbax ``CheckpointManager`` directory.

    The payload (``triggering_asset_events[...][-1].extra["payload"]`` downstream) is
    ``{"step", "path", "finalized_at", "checkpoint_dir"}``. Steps are announced oldest first,
    one per poll; a step older than the newest one announced never fires, nor does a step
    being written, a temporary directory, or a step being deleted.

    :param checkpoint_dir: ``gs://<bucket>/<path>`` or an absolute local path.
    :param min_step: announce steps from this one on (e.g. to skip an existing backlog).
    :param step_prefix: as in ``CheckpointManagerOptions``.
    :param step_format_fixed_length: as in ``CheckpointManagerOptions``.
    :param gcp_conn_id: the Google connection for ``gs://``.
    :param allow_legacy_atomic_rename: as in Orbax's ``AtomicityOptions``: also count local
        steps an Orbax older than 0.12.3 renamed into place without ``commit_success.txt``.
    :param poll_interval: seconds between listings; watchers of one directory with the same
        interval (and connection) share one listing.
    """

    def __init__(
        self,
        *,
        checkpoint_dir: str,
        min_step: int = 0,
        step_prefix: str | None = None,
        step_format_fixed_length: int | None = None,
        gcp_conn_id: str = "google_cloud_default",
        poll_interval: float = 60.0,
        allow_legacy_atomic_rename: bool = False,
    ) -> None:
        super().__init__()
        _require_shared_streams()
        if isinstance(min_step, bool) or not isinstance(min_step, int) or min_step < 0:
            raise ValueError(f"min_step must be an int >= 0, got {min_step!r}.")
        self.query = CheckpointQuery(
            checkpoint_dir=check_checkpoint_dir(checkpoint_dir),
            min_step=min_step,
            step_prefix=step_prefix,
            step_format_fixed_length=step_format_fixed_length,
            gcp_conn_id=gcp_conn_id,
            allow_legacy_atomic_rename=as_bool(
                "allow_legacy_atomic_rename", allow_legacy_atomic_rename
            ),
        )
        self.query.name_format  # noqa: B018 - a bad step_format_fixed_length fails here
        self.poll_interval = positive_seconds("poll_interval", poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {**asdict(self.query), "poll_interval": self.poll_interval},
        )

    def shared_stream_key(self) -> Hashable:
        q = self.query
        return (
            STREAM_KEY,
            q.checkpoint_dir,
            q.step_prefix,
            q.step_format_fixed_length,
            q.gcp_conn_id,
            q.allow_legacy_atomic_rename,
            self.poll_interval,
        )

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> Any:
        from airflow_provider_jax.triggers.orbax_producer import CheckpointDirProducer

        trigger = cls(**kwargs)
        return CheckpointDirProducer(CheckpointDirStream(trigger.query, trigger.poll_interval))

    async def filter_shared_stream(
        self, shared_stream: AsyncIterator[Any]
    ) -> AsyncIterator[TriggerEvent]:
        cursor = Cursor(self.asset_state_store, self.query.checkpoint_dir, self.query.min_step - 1)
        token = f"{getattr(self, 'triggerer_job_id', None)}/{uuid.uuid4().hex}"
        ownership = Ownership(cursor, token, self._lease())
        await ownership.claim()
        after = await self._settled_cursor(cursor)
        # At most one step per poll interval, also when listings queued up meanwhile (a start
        # reading the cursor): Airflow merges events that arrive before it creates a run.
        next_at, quiet = 0.0, False
        async for listing in shared_stream:
            held = await ownership.check()  # every poll: the owner says it is alive
            if held == TAKEN:
                if not quiet:
                    self.log.warning(
                        "Another triggerer now watches %s; this one stays quiet.",
                        self.query.checkpoint_dir,
                    )
                quiet = True
                continue
            if held == RETAKEN:
                self.log.warning(
                    "The watcher that took %s over went silent; this one takes it back.",
                    self.query.checkpoint_dir,
                )
                after = max(after, await self._settled_cursor(cursor))
                continue  # and checks it still owns the directory at the next poll
            quiet = False
            if time.monotonic() < next_at:
                continue
            found = await listing.first_finalized_after(after)
            if found is None:
                continue
            listing.announced[id(self)] = (cursor, found)
            after = found.step
            next_at = time.monotonic() + 0.9 * self.poll_interval
            self.log.info("Step %d is finalized at %s: announcing it", found.step, found.path)
            yield TriggerEvent(self.payload(found))

    async def _settled_cursor(self, cursor: Cursor) -> int:
        """The stored cursor, once an earlier owner's last announcement (maybe still on its
        way to the database) had time to land and move it."""
        await asyncio.sleep(TAKEOVER_SETTLE_SECONDS)
        after = await cursor.load()
        self.log.info("Watching %s for finalized steps after %d", self.query.checkpoint_dir, after)
        return after

    def _lease(self) -> float:
        """How long an owner may be silent before another copy takes the directory: past
        the triggerer's health threshold (after which Airflow moves triggers anyway), by two
        polls and the settling time."""
        threshold = conf.getfloat("triggerer", "triggerer_health_check_threshold", fallback=30.0)
        return threshold + 2 * self.poll_interval + TAKEOVER_SETTLE_SECONDS

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Without a shared stream (when the triggerer could not group this trigger): the same
        watch on its own listing. Airflow confirms nothing here, so a cursor is moved when the
        next listing is asked for, after the event was handed over."""
        stream = CheckpointDirStream(self.query, self.poll_interval)

        async def listings() -> AsyncIterator[StepListing]:
            async for listing in stream.listings():
                yield listing
                await commit_announced([listing])

        async for event in self.filter_shared_stream(listings()):
            yield event

    def payload(self, found: FinalizedStep) -> dict[str, Any]:
        return {**found.to_xcom(), "checkpoint_dir": self.query.checkpoint_dir}
