"""How many pod log streams one triggerer holds open at once: ``[jax] max_log_streams``.

A followed log holds an HTTP connection for as long as its pod runs, and asyncio gives every
TLS connection a 256 KiB read buffer: about 0.3 MiB of the triggerer's memory per streamed
job, and one long-lived request on the API server (which proxies it to the kubelet). Past
the limit a log waits for a free slot, first come first served; a job that ends before its
turn shows its last lines, read once in one short request.

Streams also start at most ``STARTS_PER_S`` a second. Each start is a TLS handshake, some
5 ms of the event loop, and they come in crowds: a thousand triggers resuming, or an API
server restart that breaks every stream at once and hands each slot to the next job in line.
Paced, the loop still hears the JobSets that end meanwhile.
"""

from __future__ import annotations

import asyncio
from collections import deque

from airflow_provider_jax.triggers.watch.per_loop import PerLoop

# Airflow's default [triggerer] capacity: a triggerer at its defaults never meets the limit.
DEFAULT_MAX_LOG_STREAMS = 1000
STARTS_PER_S = 100.0  # about half of one core's worth of TLS handshakes
_shared: PerLoop[str, StreamSlots] = PerLoop()


class StreamSlots:
    """At most ``limit`` log streams at once; the others wait their turn in order.

    :param limit: how many streams may be open at once.
    :param starts_per_s: how many may start in a second.
    """

    def __init__(self, limit: int, starts_per_s: float = STARTS_PER_S) -> None:
        self.limit = limit
        self.held = 0
        # The turns of the logs waiting, first first: never a done one (a turn is taken out
        # of the line as it is served or given up).
        self._line: deque[asyncio.Future[None]] = deque()
        self._gap = 1.0 / starts_per_s
        self._next_start = 0.0  # loop time

    @property
    def waiting(self) -> int:
        return len(self._line)

    async def take(self, unless: asyncio.Event) -> bool:
        """Hold a slot (True) once one is free; False, holding none, if ``unless`` is set
        first. Whoever gets True calls :meth:`give` when its stream ends."""
        if self.held < self.limit and not self.waiting:
            self.held += 1
            return await self._paced()
        turn = asyncio.get_running_loop().create_future()
        self._line.append(turn)
        give_up = asyncio.ensure_future(unless.wait())
        try:
            await asyncio.wait({turn, give_up}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            self._leave(turn)
            raise
        finally:
            give_up.cancel()
        if turn.done():
            return await self._paced()
        self._leave(turn)
        return False

    async def _paced(self) -> bool:
        """Holding a slot: wait for this start's turn in the pace, then True."""
        loop = asyncio.get_running_loop()
        start = max(loop.time(), self._next_start)
        self._next_start = start + self._gap
        try:
            await asyncio.sleep(start - loop.time())
        except BaseException:
            self.give()
            raise
        return True

    def give(self) -> None:
        """A stream ended: its slot passes to the first in line, if any."""
        if self._line:
            self._line.popleft().set_result(None)  # handed over: still held
        else:
            self.held -= 1

    def _leave(self, turn: asyncio.Future[None]) -> None:
        if turn.done() and not turn.cancelled():
            self.give()  # handed a slot it will not use: pass it on
        else:
            turn.cancel()
            self._line.remove(turn)


def stream_slots() -> StreamSlots:
    """This event loop's slots (one triggerer's), sized by ``[jax] max_log_streams``."""
    return _shared.get("log-streams", _from_config, lambda _: True)


def _from_config() -> StreamSlots:
    from airflow.configuration import conf

    limit = conf.getint("jax", "max_log_streams", fallback=DEFAULT_MAX_LOG_STREAMS)
    return StreamSlots(max(limit, 0))
