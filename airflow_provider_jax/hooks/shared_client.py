"""Kubernetes ``ApiClient``\\ s shared by a hook's calls, instead of one per call.

The cncf and google hooks' ``get_conn()`` builds a new ``ApiClient`` for every call: a new SSL
context (the CA bundle parsed again), connection and TLS handshake, a few milliseconds of CPU
each. An operator makes a handful of calls, but a triggerer resuming a thousand JobSet triggers
at once makes thousands, and the event loop stalls while it does. :class:`SharedApiClient`
keeps one client (one connection pool, whose idle connections are reused) open while any call
uses it, and opens a new one for calls after ``max_age`` seconds, so a refreshed token or
kubeconfig still applies. A client closes when the last call using it ends, and serves only
the event loop that opened it, so nothing outlives its loop.

kubernetes_asyncio makes every client with aiohttp's ``trust_env``, which looks up proxy
settings and ``~/.netrc`` in a worker thread on every request: two thread hand-offs per call,
over a third of a triggerer's CPU when a thousand jobs start. Where the environment has neither
for the API server, those lookups can only come back empty, so a shared client skips them; a
client opened after ``max_age`` looks at the environment again.

A log stream holds one of its pool's connections for as long as its pod runs. With
``holds_connection=True`` a client takes no more users than its pool has connections, and a
new client opens beside a full one, so a stream never queues behind the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from aiohttp.helpers import get_env_proxy_for_url, netrc_from_env
from yarl import URL

MAX_AGE = 300.0  # seconds a client takes new calls; tokens (GKE: 1 h) outlive it


class _Lease:
    def __init__(
        self, connection: AbstractAsyncContextManager[Any], api: Any, capacity: float
    ) -> None:
        self.connection, self.api, self.capacity = connection, api, capacity
        self.born = time.monotonic()
        self.users = 0
        self.closed = False

    async def close(self) -> None:
        self.closed = True
        await self.connection.__aexit__(None, None, None)


def skip_empty_env_lookups(api: Any) -> None:
    """Turn off ``trust_env`` on ``api``'s session where the environment names no proxy
    and no netrc file for the API server: aiohttp's own lookups, once instead of per call."""
    session = getattr(getattr(api, "rest_client", None), "pool_manager", None)
    if session is None or getattr(session, "_trust_env", None) is not True:
        return
    if netrc_from_env() is not None:
        return
    try:
        get_env_proxy_for_url(URL(api.configuration.host))
    except LookupError:
        session._trust_env = False  # no public setter; aiohttp reads it per request


def pool_size(api: Any) -> float:
    """How many connections an ``ApiClient``'s aiohttp pool holds (its limit; 0 is none)."""
    connector = getattr(getattr(api, "rest_client", None), "pool_manager", None)
    return getattr(getattr(connector, "connector", None), "limit", 0) or math.inf


class SharedApiClient:
    """``async with shared() as api``: an ``ApiClient`` from ``connect`` (a hook's
    ``get_conn``), shared with every call in flight on the same event loop.

    :param connect: makes a new client (an async context manager).
    :param max_age: seconds a client takes new calls.
    :param holds_connection: each user keeps a connection for its whole use (a log stream):
        a client takes no more users than its pool's size.
    """

    def __init__(
        self,
        connect: Callable[[], AbstractAsyncContextManager[Any]],
        max_age: float = MAX_AGE,
        holds_connection: bool = False,
    ) -> None:
        self._connect, self._max_age = connect, max_age
        self._holds_connection = holds_connection
        self._current: asyncio.Future[_Lease] | None = None

    def _takes_users(self, current: asyncio.Future[_Lease]) -> bool:
        if current.get_loop() is not asyncio.get_running_loop():
            return False  # another event loop's (an earlier asyncio.run)
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
        skip_empty_env_lookups(api)
        return _Lease(connection, api, pool_size(api) if self._holds_connection else math.inf)

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
        try:
            yield lease.api
        finally:
            lease.users -= 1
            if lease.users == 0:
                if self._current is current:
                    self._current = None
                await lease.close()
