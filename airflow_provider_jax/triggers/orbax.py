"""Trigger that polls for a finalized Orbax checkpoint from the triggerer's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_jax.arguments import as_bool
from airflow_provider_jax.checkpoints import (
    CheckpointDirError,
    CheckpointQuery,
    StorageUnavailableError,
    afind_newest_finalized,
    anaming_hint,
)


class OrbaxCheckpointTrigger(BaseTrigger):
    """Fire once the newest finalized step in ``checkpoint_dir`` is ``>= min_step``.

    Holds plain data only and has no side effects, so the triggerer may restart it at will.
    Yields exactly one event: ``{"status": "success", "checkpoint": {...}}`` or, when waiting
    cannot help (missing bucket, 403), ``{"status": "error", "message": ...}``. Transient storage
    errors are retried with backoff inside each check and otherwise just wait for the next one.

    :param allow_legacy_atomic_rename: as in Orbax's ``AtomicityOptions``: also count local
        steps an Orbax older than 0.12.3 renamed into place without ``commit_success.txt``.
    :param poll_interval: seconds between checks (the sensor's ``poke_interval``). Rows that
        release 0.1 stored call it ``poke_interval``; they still load.
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
        poke_interval: float | None = None,
    ) -> None:
        super().__init__()
        self.query = CheckpointQuery(
            checkpoint_dir=checkpoint_dir,
            min_step=min_step,
            step_prefix=step_prefix,
            step_format_fixed_length=step_format_fixed_length,
            gcp_conn_id=gcp_conn_id,
            allow_legacy_atomic_rename=as_bool(
                "allow_legacy_atomic_rename", allow_legacy_atomic_rename
            ),
        )
        self.poll_interval = float(poll_interval if poke_interval is None else poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {**asdict(self.query), "poll_interval": self.poll_interval},
        )

    async def _hint(self) -> str:
        """Step folders named another way, when there are any: never worth failing a check."""
        try:
            hint = await anaming_hint(self.query)
        except (CheckpointDirError, StorageUnavailableError):
            return ""
        return f" ({hint})" if hint else ""

    async def run(self) -> AsyncIterator[TriggerEvent]:
        where = self.query.checkpoint_dir
        while True:
            try:
                found = await afind_newest_finalized(self.query)
            except CheckpointDirError as exc:
                yield TriggerEvent({"status": "error", "message": str(exc)})
                return
            except StorageUnavailableError as exc:
                self.log.warning("Could not check %s, will try again: %s", where, exc)
            else:
                if found is not None:
                    self.log.info("Step %d is finalized at %s", found.step, found.path)
                    yield TriggerEvent({"status": "success", "checkpoint": found.to_xcom()})
                    return
                self.log.info(
                    "No finalized step >= %d in %s yet%s; next check in %.0fs",
                    self.query.min_step,
                    where,
                    await self._hint(),
                    self.poll_interval,
                )
            await asyncio.sleep(self.poll_interval)
