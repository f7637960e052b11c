"""Kubernetes ``ApiClient``\\ s shared by a hook's calls, instead of one per call.

The cncf and google hooks' ``get_conn()`` builds a new ``ApiClient`` for every call: a new SSL
context (the CA bundle parsed again), DNS lookup, connection and TLS handshake, a millisecond
or more of CPU each. An operator makes a handful of calls, but a triggerer where a thousand
JobSets start and end within a minute makes thousands, and the event loop stalls while it
does. :class:`SharedApiClient` keeps a client (one connection pool, whose idle keep-alive
connections are reused) open while calls use it and for ``linger`` seconds after the last one,
and opens a new one for calls after ``max_age`` seconds, so a refreshed token or kubeconfig
still applies.

A log stream holds one of the pool's connections for as long as its pod runs. For streams,
``holds_connection=True`` gives a client no more users than its pool has connections, and
opens another client beside it when it is full, so a stream never queues behind the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

MAX_AGE = 300.0  # seconds a client takes new calls; tokens (GKE: 1 h) outlive it
LINGER = 30.0  # seconds an idle client stays open for the next call


class _Lease:
    def __init__(
        self, connection: AbstractAsyncContextManager[Any], api: Any, capacity: float
    ) -> None:
        self.connection, self.api, self.capacity = connection, api, capacity
        self.born = self.idle_since = time.monotonic()
        self.users = 0
        self.closed = False
        self.reaper: asyncio.Future[None] | None = None

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self.connection.__aexit__(None, None, None)


def _pool_size(api: Any) -> float:
    """How many connections an ``ApiClient``'s aiohttp pool holds (0 there: no limit)."""
    connector = getattr(getattr(api, "rest_client", None), "pool_manager", None)
    limit = getattr(getattr(connector, "connector", None), "limit", 0)
    return limit or math.inf


class SharedApiClient:
    """``async with shared() as api``: an ``ApiClient`` from ``connect`` (a hook's
    ``get_conn``), shared with every call on the same event loop.

    :param connect: makes a new client (an async context manager).
    :param max_age: seconds a client takes new calls.
    :param linger: seconds an idle client stays open (0: it closes with its last call).
    :param holds_connection: each user keeps a connection (a log stream): a client takes no
        more users than its pool's size.
    """

    def __init__(
        self,
        connect: Callable[[], AbstractAsyncContextManager[Any]],
        max_age: float = MAX_AGE,
        linger: float = LINGER,
        holds_connection: bool = False,
    ) -> None:
        self._connect, self._max_age, self._linger = connect, max_age, linger
        self._holds_connection = holds_connection
        self._current: asyncio.Future[_Lease] | None = None

    def _takes_users(self, current: asyncio.Future[_Lease]) -> bool:
        if not current.done():
            return True  # being opened: wait for it
        if current.cancelled() or current.exception() is not None:
            return False
        lease = current.result()
        fresh = time.monotonic() - lease.born < self._max_age
        return not lease.closed and fresh and lease.users < lease.capacity

    async def _open(self) -> _Lease:
        connection = self._connect()
        api = await connection.__aenter__()
        return _Lease(connection, api, _pool_size(api) if self._holds_connection else math.inf)

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[Any]:
        while True:
            current = self._current
            if current is None or not self._takes_users(current):
                current = self._current = asyncio.ensure_future(self._open())
            # Shielded: a caller cancelled while the client opens does not cancel the others.
            lease = await asyncio.shield(current)
            # Not closed by its other users, nor filled by them, while this one waited.
            if not lease.closed and lease.users < lease.capacity:
                break
        lease.users += 1
        if self._linger > 0 and lease.reaper is None:
            lease.reaper = asyncio.ensure_future(self._reap(current, lease))
        try:
            yield lease.api
        finally:
            lease.users -= 1
            lease.idle_since = time.monotonic()
            lingering = lease.reaper is not None and not lease.reaper.done()
            kept = lingering and self._current is current and self._takes_users(current)
            if lease.users == 0 and not kept:
                await self._close(current, lease)

    async def _reap(self, current: asyncio.Future[_Lease], lease: _Lease) -> None:
        """Close ``lease`` once it has been idle for ``linger`` seconds; also when the event
        loop ends (``asyncio.run`` cancels this), so no client outlives its loop."""
        try:
            while not lease.closed:
                idle = time.monotonic() - lease.idle_since
                if lease.users == 0 and idle >= self._linger:
                    break
                await asyncio.sleep(self._linger - idle if lease.users == 0 else self._linger)
        finally:
            if lease.users == 0:  # else its last user closes it
                await self._close(current, lease)

    async def _close(self, current: asyncio.Future[_Lease], lease: _Lease) -> None:
        if self._current is current:
            self._current = None
        await lease.close()
