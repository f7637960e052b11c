"""One listing of a JobSet's pods for the trigger's helpers that read them at the same
moment: the leader-log follower and the start-up checker both look when the JobSet changes,
and in a burst of a thousand starting JobSets, two pod lists per change were a good part of
the triggerer's CPU (each a request and a JSON parse of every pod)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from airflow_provider_jax.hooks.jobset import AsyncJobSetHook

FRESH_FOR = 2.0  # seconds a listing serves later readers, unless the JobSet changed since


class SharedPodList:
    """``hook`` for the helpers, except that ``list_jobset_pods`` answers concurrent and
    closely following calls with one request. A JobSet change (``changed()``) makes the next
    call list again, so no reader acts on pods from before a change it has heard of."""

    def __init__(self, hook: AsyncJobSetHook, fresh_for: float = FRESH_FOR) -> None:
        self.hook, self.fresh_for = hook, fresh_for
        self._listing: asyncio.Future[list[dict[str, Any]]] | None = None
        self._listed_at = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.hook, name)  # every other call goes to the hook as it is

    def changed(self) -> None:
        if self._listing is not None and self._listing.done():
            self._listing = None

    async def list_jobset_pods(self, name: str, namespace: str) -> list[dict[str, Any]]:
        listing = self._listing
        stale = (
            listing is not None
            and listing.done()
            and (
                listing.cancelled()
                or listing.exception() is not None
                or time.monotonic() - self._listed_at > self.fresh_for
            )
        )
        if listing is None or stale:
            self._listed_at = time.monotonic()
            listing = self._listing = asyncio.ensure_future(
                self.hook.list_jobset_pods(name, namespace)
            )
        # Shielded: one reader cancelled (a helper stopping) does not fail the others.
        return await asyncio.shield(listing)
