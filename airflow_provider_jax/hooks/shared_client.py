"""One Kubernetes ``ApiClient`` for the concurrent calls of a hook, instead of one per call.

The cncf and google hooks' ``get_conn()`` builds a new ``ApiClient`` for every call: a new SSL
context, connection and TLS handshake, a few milliseconds of CPU each. An operator makes a
handful of calls, but a triggerer resuming a thousand JobSet triggers at once makes thousands,
and the event loop stalls while it does. :class:`SharedApiClient` keeps one client (one
connection pool, whose idle connections are reused) open while any call uses it, and opens a
new one for calls after ``max_age`` seconds, so a refreshed token or kubeconfig still applies.
A client closes when the last call using it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

MAX_AGE = 300.0  # seconds a client takes new calls; tokens (GKE: 1 h) outlive it


class _Lease:
    def __init__(self, connection: AbstractAsyncContextManager[Any], api: Any) -> None:
        self.connection, self.api = connection, api
        self.born = time.monotonic()
        self.users = 0
        self.closed = False

    @classmethod
    async def open(cls, connect: Callable[[], AbstractAsyncContextManager[Any]]) -> _Lease:
        connection = connect()
        return cls(connection, await connection.__aenter__())

    async def close(self) -> None:
        self.closed = True
        await self.connection.__aexit__(None, None, None)


class SharedApiClient:
    """``async with shared() as api``: an ``ApiClient`` from ``connect`` (a hook's
    ``get_conn``), shared with every call in flight on the same event loop."""

    def __init__(
        self,
        connect: Callable[[], AbstractAsyncContextManager[Any]],
        max_age: float = MAX_AGE,
    ) -> None:
        self._connect, self._max_age = connect, max_age
        self._current: asyncio.Future[_Lease] | None = None

    def _usable(self, current: asyncio.Future[_Lease]) -> bool:
        if not current.done():
            return True  # being opened: wait for it
        if current.cancelled() or current.exception() is not None:
            return False
        lease = current.result()
        return not lease.closed and time.monotonic() - lease.born < self._max_age

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[Any]:
        while True:
            current = self._current
            if current is None or not self._usable(current):
                current = self._current = asyncio.ensure_future(_Lease.open(self._connect))
            # Shielded: a caller cancelled while the client opens does not cancel the others.
            lease = await asyncio.shield(current)
            if not lease.closed:  # not closed by its other users while this one waited
                break
        lease.users += 1
        try:
            yield lease.api
        finally:
            lease.users -= 1
            if lease.users == 0:
                if self._current is current:
                    self._current = None
                await lease.close()
