"""How many pod log streams one triggerer holds open at once: ``[jax] max_log_streams``.

A followed log holds an HTTP connection for as long as its pod runs, and asyncio gives every
TLS connection its own read buffer: most of what a streamed job costs the triggerer's memory,
and one long-lived request on the API server (which proxies it to the kubelet). Past
the limit a log waits for a free slot, first come first served; a job that ends before its
turn shows its last lines, read once in one short request.

At most ``MAX_OPENING`` streams are being opened at once. Each opening is a TLS handshake
and a request on the event loop, and they come in crowds: a thousand triggers resuming, or an
API server restart that breaks every stream at once and hands each slot to the next job in
line. Bounded, the loop still hears the JobSets that end meanwhile. A bound on openings in
flight, not a rate: pacing spreads the handshakes out and costs more CPU in all
(``bench/triggerer_scale.py``; the figures are in ``docs/kubernetes.md``).
"""

from __future__ import annotations

import asyncio
from collections import deque

from airflow_provider_jax import settings
from airflow_provider_jax.metrics.send import LOG_STREAMS
from airflow_provider_jax.triggers.watch.per_loop import PerLoop

# Airflow's default [triggerer] capacity: a triggerer at its defaults never meets the limit.
DEFAULT_MAX_LOG_STREAMS = int(settings.SETTINGS["max_log_streams"].default)
MAX_OPENING = 20  # streams in their TLS handshake and request at once
_shared: PerLoop[str, StreamSlots] = PerLoop()


class StreamSlots:
    """At most ``limit`` log streams at once; the others wait their turn in order. Whoever
    :meth:`take` gives True calls :meth:`opened` once its stream is open (or failed to
    open), and :meth:`give` when it ends.

    :param limit: how many streams may be open at once.
    :param max_opening: how many may be opening at once.
    """

    def __init__(self, limit: int, max_opening: int = MAX_OPENING) -> None:
        self.limit = limit
        self.held = 0
        # The turns of the logs waiting, first first: never a done one (a turn is taken out
        # of the line as it is served or given up).
        self._line: deque[asyncio.Future[None]] = deque()
        self._opening = asyncio.Semaphore(max_opening)

    @property
    def waiting(self) -> int:
        return len(self._line)

    async def take(self, unless: asyncio.Event) -> bool:
        """Hold a slot and the turn to open a stream (True) once both are free; False,
        holding none, if ``unless`` is set first."""
        if self.held < self.limit and not self.waiting:
            self.held += 1
            return await self._to_open()
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
            return await self._to_open()
        self._leave(turn)
        return False

    async def _to_open(self) -> bool:
        """Holding a slot: wait for a turn to open the stream, then True."""
        try:
            await self._opening.acquire()
        except BaseException:
            self._pass_on()
            raise
        LOG_STREAMS.add(1)
        return True

    def opened(self) -> None:
        """The stream is open (or failed to open): the next may open."""
        self._opening.release()

    def give(self) -> None:
        """A stream ended: its slot passes to the first in line, if any."""
        LOG_STREAMS.add(-1)
        self._pass_on()

    def _pass_on(self) -> None:
        if self._line:
            self._line.popleft().set_result(None)  # handed over: still held
        else:
            self.held -= 1

    def _leave(self, turn: asyncio.Future[None]) -> None:
        if turn.done() and not turn.cancelled():
            self._pass_on()  # handed a slot it will not use
        else:
            turn.cancel()
            self._line.remove(turn)


def stream_slots() -> StreamSlots:
    """This event loop's slots (one triggerer's), sized by ``[jax] max_log_streams``."""
    return _shared.get("log-streams", _from_config, lambda _: True)


def _from_config() -> StreamSlots:

    limit = settings.get("max_log_streams")
    return StreamSlots(max(limit, 0))
