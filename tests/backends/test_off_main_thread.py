"""The blocking wait leaves the main thread to Airflow's execution_timeout alarm: a real
SIGALRM, raised in the main thread as Airflow's ``timeout`` raises it."""

from __future__ import annotations

import asyncio
import signal
import threading
import time

import pytest

from airflow_provider_jax.backends.off_main_thread import wait_off_main_thread


class Alarm(BaseException):
    """Like ``AirflowTaskTimeout``: a BaseException, so an asyncio task would swallow it."""


def test_returns_the_result_and_raises_the_works_own_error():
    async def answer() -> int:
        await asyncio.sleep(0.01)
        return 42

    async def fail() -> None:
        raise ValueError("the JobSet failed")

    assert wait_off_main_thread(answer(), name="answer") == 42
    with pytest.raises(ValueError, match="the JobSet failed"):
        wait_off_main_thread(fail(), name="fail")


def test_the_waiting_thread_leaves_airflows_signals_to_the_main_thread():
    """Delivered to the waiting thread, the alarm or a kill would only set a flag there,
    while the main thread slept on the answer: the kernel must never pick that thread."""

    async def mask() -> set[int]:
        return set(signal.pthread_sigmask(signal.SIG_BLOCK, []))

    before = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    blocked = wait_off_main_thread(mask(), name="mask")
    assert {signal.SIGALRM, signal.SIGTERM, signal.SIGINT} <= blocked
    assert set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) == before  # the main's as it was


def test_the_alarm_interrupts_the_wait_at_once_and_cancels_the_work():
    stopped = threading.Event()
    in_thread: list[str] = []

    async def wait_forever() -> None:
        in_thread.append(threading.current_thread().name)
        # A background task steps now and then, where an alarm would be swallowed.
        ticker = asyncio.create_task(_tick())
        try:
            await asyncio.sleep(60)
        finally:
            ticker.cancel()
            stopped.set()

    def ring(signum, frame):
        raise Alarm

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    started = time.monotonic()
    try:
        with pytest.raises(Alarm):
            wait_off_main_thread(wait_forever(), name="waiter")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 5
    assert in_thread == ["waiter"]
    assert stopped.wait(5), "the interrupted work was not cancelled"


async def _tick() -> None:
    """Busy in its steps: awaited on the main thread, the alarm lands in one and is lost
    (the task keeps the exception), and the wait runs on for its full minute. Each step lets
    go of the GIL once: on Python 3.11 a thread that never does starves the main thread of
    it, which then runs the alarm's handler seconds late (a waiting trigger's thread sits in
    I/O, never so)."""
    while True:
        sum(range(20_000))
        time.sleep(0)
        await asyncio.sleep(0)
