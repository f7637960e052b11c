"""The hung-host watchdog: a process that stops reporting progress dumps every thread's
Python stack and exits with the "hung" code, so the slice restarts instead of stalling
until the task's timeout, and the stack says where it hung.

Stdlib only (``faulthandler`` and a thread): no sidecar and no extra RBAC. Armed at the first
``report()``, so a slow start (image pull, compilation, a restore) never trips it; stopped
when the training function returns, so nothing runs after it.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from airflow_provider_jax.runtime import exits
from airflow_provider_jax.runtime.exits import EXIT_HUNG


class Watchdog:
    """Calls ``on_hung(stacks)`` and exits :data:`EXIT_HUNG` after ``timeout`` seconds
    without a :meth:`beat`."""

    def __init__(self, timeout: float, on_hung: Callable[[str, float], None]) -> None:
        self.timeout, self.on_hung = timeout, on_hung
        self._last = time.monotonic()
        self._stopped = threading.Event()
        self._fired = False  # it has begun the hang's report: that report is the process's
        self._lock = threading.Lock()  # one of stop() and a firing goes first
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        """Progress: start the clock over (and arm the watchdog on the first beat)."""
        self._last = time.monotonic()
        if self._thread is None and not self._stopped.is_set():
            self._thread = threading.Thread(target=self._watch, name="airflow-jax-watchdog")
            self._thread.daemon = True
            self._thread.start()

    def stop(self) -> None:
        """Disarm it: the function returned or raised (or a preemption stops the process),
        and the caller reports that. If it fired first, the hang is the report (its class
        decides the restart, its exit code goes with it): wait for the exit it makes, writing
        nothing; if its thread ended without one, make it."""
        with self._lock:
            self._stopped.set()
            fired = self._fired
        if fired and self._thread is not threading.current_thread():
            assert self._thread is not None
            self._thread.join()
            os._exit(EXIT_HUNG)

    def _watch(self) -> None:
        while not self._stopped.wait(min(1.0, self.timeout / 4)):
            idle = time.monotonic() - self._last
            if idle >= self.timeout:
                self._fire(idle)

    def _fire(self, idle: float) -> None:
        with self._lock:
            if self._stopped.is_set():
                return  # the main thread reports how the function ended
            self._fired = True
        try:
            try:
                stacks = all_stacks()
            except Exception as err:  # a full or read-only /tmp: the hang is still reported
                stacks = f"(the stacks could not be dumped: {err})"
            sys.stderr.write(
                f"airflow-jax: no progress report for {idle:.0f}s (progress_timeout="
                f"{self.timeout:g}s); every thread's stack:\n{stacks}"
            )
            sys.stderr.flush()
            self.on_hung(stacks, idle)
        finally:  # whatever failed above (a full /tmp, a closed stream), the process ends
            try:
                exits.end(EXIT_HUNG)
            finally:
                os._exit(EXIT_HUNG)


def all_stacks() -> str:
    """Every thread's Python stack, as ``faulthandler`` prints them (no GIL-free surprises)."""
    with tempfile.TemporaryFile("w+") as dump:
        faulthandler.dump_traceback(file=dump, all_threads=True)
        dump.seek(0)
        return dump.read()
