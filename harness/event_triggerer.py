"""Drive ``BaseEventTrigger`` watchers as Airflow's triggerer does: one shared-stream manager,
each trigger event bound to the raw event it came from, confirmed stored when told to. And the
per-asset state accessor the triggerer injects, kept in memory."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import TriggerEvent
from airflow.triggers.shared_stream import SharedStreamManager


class AssetStore:
    """Stands in for Airflow's per-asset state accessor (the triggerer's goes over its comms
    channel to the metadata database; the running-Airflow test uses that one)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def aget(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    async def aset(self, key: str, value: Any) -> None:
        self.values[key] = json.loads(json.dumps(value))


class WatchedAssets(list):
    """What the triggerer injects as ``asset_state_store``: one accessor per watching asset."""


class EventTriggerer:
    """Runs watchers through Airflow's ``SharedStreamManager`` in ack mode."""

    def __init__(self, autopersist: bool = False) -> None:
        self.manager = SharedStreamManager()
        self.unconfirmed: list[int] = []
        self.autopersist = autopersist  # confirm each event at once, as a healthy triggerer

    async def events(self, trigger_id: int, trigger: Any) -> AsyncIterator[TriggerEvent]:
        key = trigger.shared_stream_key()
        stream = self.manager.subscribe(trigger_id=trigger_id, trigger=trigger, key=key)
        try:
            async for event in trigger.filter_shared_stream(stream):
                seq = self.manager.bind_pending_event(trigger_id=trigger_id, key=key)
                assert seq is not None  # ack mode
                self.unconfirmed.append(seq)
                if self.autopersist:
                    self.persist()
                yield event
        finally:
            await self.manager.unsubscribe(trigger_id, key)

    def persist(self) -> None:
        self.manager.confirm_persisted(self.unconfirmed)
        self.unconfirmed = []
