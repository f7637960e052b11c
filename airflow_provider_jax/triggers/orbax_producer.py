"""The ack-mode producer of a checkpoint directory's shared stream (Airflow 3.3+; imported only
by the triggerer, so DAG files never load Airflow's shared-stream machinery)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.shared_stream import AdvanceItem, SharedStreamProducer

from airflow_provider_jax.checkpoints.stream import (
    CheckpointDirStream,
    commit_announced,
)

log = logging.getLogger(__name__)


class CheckpointDirProducer(SharedStreamProducer):
    """Each poll's listing is both the raw event and its "broker payload": advancing past it
    moves the cursors of the watchers that announced a step from it."""

    def __init__(self, stream: CheckpointDirStream) -> None:
        self.stream = stream

    async def open_stream(self) -> AsyncIterator[tuple[Any, Any]]:
        async for listing in self.stream.listings():
            yield listing, listing

    async def advance(self, batch: Sequence[AdvanceItem]) -> None:
        # failed: a watcher's event was not confirmed stored (ack timeout); it is announced
        # again after a restart rather than lost.
        if any(item.outcome.failed for item in batch):
            log.warning("Not all announcements of one poll were stored; they may repeat.")
        await commit_announced([item.broker_payload for item in batch if not item.outcome.failed])
