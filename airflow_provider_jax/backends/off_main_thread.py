"""Await a coroutine on an event loop of its own thread, while the calling (main) thread only
waits for its answer.

Airflow ends a blocking task at its ``execution_timeout`` by raising ``AirflowTaskTimeout``
from a SIGALRM handler in the main thread, wherever that thread is. Awaited there, a wait
would take it at a random point: inside an asyncio task's step, which stores a
``BaseException`` on that task instead of raising it (a log stream's task would swallow the
timeout), or inside Python 3.11's ``logging`` cache clearing, which holds the logging lock
without a ``finally`` (a Kubernetes client that loads its config calls it), leaving the lock
held for good and the process hung. A main thread that only waits on a future takes the
signal there and nowhere else. The waiting thread blocks those signals, so the kernel, which
hands a process-wide signal to any thread that does not block it, always hands them to the
main thread, the only one that runs Python's handlers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
# Asynchronous signals that Airflow (the alarm, a kill) or a user sends the task process.
KEPT_ON_MAIN = {
    signal.SIGALRM,
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
}


def wait_off_main_thread(work: Coroutine[Any, Any, T], name: str) -> T:
    """``work``'s result, awaited in a daemon thread. Whatever interrupts the wait here (the
    execution_timeout's alarm, a kill) cancels ``work`` and is raised; the task's ``on_kill``
    then does the cleanup, as Airflow calls it next."""
    answer: concurrent.futures.Future[T] = concurrent.futures.Future()
    running: list[asyncio.Task[Any]] = []  # the task awaiting ``work``, once it runs

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None  # a coroutine under asyncio.run always runs in one
        running.append(task)
        if answer.cancelled():  # interrupted before this thread got going
            work.close()
            raise asyncio.CancelledError
        return await work

    def run() -> None:
        try:
            answer.set_result(asyncio.run(main()))
        except BaseException as err:  # handed to the waiting thread, whatever it is
            if not answer.cancelled():
                answer.set_exception(err)

    thread = threading.Thread(target=run, name=name, daemon=True)
    try:
        # Blocked while the thread starts, so that it inherits the blocked set; a signal that
        # arrives meanwhile lands as the mask is restored, inside the try, and the work is
        # still cancelled.
        main_mask = signal.pthread_sigmask(signal.SIG_BLOCK, KEPT_ON_MAIN)
        try:
            thread.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, main_mask)
        return answer.result()
    except BaseException:
        if answer.cancel():  # still pending: the wait itself was interrupted
            for task in running:
                with contextlib.suppress(RuntimeError):  # its loop has just closed
                    task.get_loop().call_soon_threadsafe(task.cancel)
        raise
