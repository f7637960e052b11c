"""Progress lines that never stall the accelerator.

A ``report(loss=loss)`` given a JAX array used to convert it on the spot: ``.item()`` waits
for the step that computes it, so every report stopped JAX's asynchronous dispatch, and a
line printed every step cost the loop more than the step itself. Here the call only queues
its values; one thread prints them once the device has computed them, while the loop goes on:

- at most one batch of lines every ``interval`` (ten a second): a report that a newer one of
  the same metrics, in the same tenth of ``total_steps``, follows within that time is
  superseded, never converted or printed. The first report, one with other metrics (an
  evaluation), one in each tenth of the run and the last are always printed;
- in the order of the calls;
- everything a caller can get wrong (an array that is not a scalar, a complex or unknown
  type) is refused at the call, from the value's type and shape alone.

Stdlib only: JAX arrays are recognized by their methods, never by importing JAX.
"""

from __future__ import annotations

import atexit
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from airflow_provider_jax.runtime.messages import TOTAL_STEPS_KEY, tenth_of

Body = dict[str, Any]
POLL_INTERVAL = 0.002  # s: how often the thread looks whether the device has a value
CHECKED_AVALS = 64  # shapes and types remembered as good; a loop returns one or two
AT_EXIT_TIMEOUT = 10.0  # s: the last lines of a program that ends without runtime.main


def on_device(value: Any) -> bool:
    """A JAX array: its value may still be on its way from the device."""
    return hasattr(value, "copy_to_host_async") and hasattr(value, "block_until_ready")


def plain(name: str, value: Any) -> Any:
    """``value`` as JSON can carry it: a JAX or NumPy scalar becomes its Python number, and a
    float that JSON has no spelling for (nan, inf) its string."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if not isinstance(value, float) and callable(getattr(value, "item", None)):
        check_scalar(name, value)
        value = value.item()  # a JAX or NumPy scalar
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"report({name}=...) must be a number or a string, got {type(value).__name__}")


def check_scalar(name: str, value: Any) -> Any:
    """``value``, or an error for an array that cannot become one JSON number (read from its
    shape and type, not its value)."""
    size, dtype = getattr(value, "size", 1), getattr(value, "dtype", None)
    if size != 1:
        raise TypeError(f"report({name}=...) must be a scalar, got an array of shape {value.shape}")
    if getattr(dtype, "kind", "") == "c":
        raise TypeError(f"report({name}=...) must be a number or a string, got complex {dtype}")
    return value


class Reporter:
    """Emits report bodies in call order from a background thread, at most one batch every
    ``interval`` seconds, each body once its device values are ready.

    :param emit: prints one finished body (the line, the last report, the watchdog's beat).
    :param interval: the least time between two batches of lines, in seconds.
    """

    def __init__(self, emit: Callable[[Body], None], interval: float = 0.1) -> None:
        self._emit, self._interval = emit, interval
        self._queue: list[Body] = []
        self._changed = threading.Condition(threading.Lock())
        self._busy = False  # the thread prints a batch taken off the queue
        self._idle = False  # the thread waits for a first line (else it wakes by itself)
        self._hurry = False  # flush(): print what is queued without waiting out the interval
        self._thread: threading.Thread | None = None
        self._checked: dict[int, Any] = {}  # JAX's abstract values (shape, type) seen good
        self._previous: list[Any] = []  # the last report's device values (_keep_pace)
        self._first: Body | None = None  # the first report: printed, whatever follows it

    def submit(self, body: Body) -> None:
        """Queue ``body`` (checked now) to be printed. It waits for the device only as far
        as the previous report: see :meth:`_keep_pace`."""
        on_device_now = []
        for name, value in body.items():
            if type(value) in _PLAIN:
                continue
            if not on_device(value):
                body[name] = plain(name, value)
                continue
            on_device_now.append(value)
            if self._checked.get(id(aval := getattr(value, "aval", None))) is not aval:
                check_scalar(name, value)  # once per shape and type a jitted step returns
                if len(self._checked) >= CHECKED_AVALS:
                    self._checked.clear()
                self._checked[id(aval)] = aval
        self._keep_pace(on_device_now)
        with self._changed:
            queue = self._queue
            if self._first is None:
                self._first = body
            if queue and queue[-1] is not self._first and _supersedes(body, queue[-1]):
                queue[-1] = body  # before it was printed
            else:
                queue.append(body)
            if self._idle:
                self._changed.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="airflow-jax-reports")
                self._thread.daemon = True  # flush() is what waits for the last lines
                self._thread.start()
                atexit.register(self.flush, AT_EXIT_TIMEOUT)  # a script run without ours

    def _keep_pace(self, values: list[Any]) -> None:
        """Wait until the previous report's values are computed, then remember these. The
        loop stays at most one report interval ahead of the device: still a whole step of
        overlap when it reports every step, and bounded memory. Unbounded, a multi-process
        CPU job's collectives deadlock once dozens of steps are in flight (seen with the
        quickstart's two processes here)."""
        for value in self._previous:
            if not value.is_ready():
                value.block_until_ready()
        self._previous = values

    def flush(self, timeout: float | None = None) -> bool:
        """Print every queued line now and wait until they are out; False if ``timeout`` ran
        out first (a device that never finishes its step)."""
        with self._changed:
            self._hurry = True
            self._changed.notify_all()
            done = self._changed.wait_for(lambda: not self._queue and not self._busy, timeout)
            self._hurry = False
            return done

    def _run(self) -> None:
        while True:
            with self._changed:
                self._idle = True
                self._changed.wait_for(lambda: bool(self._queue))
                batch, self._queue, self._busy, self._idle = self._queue, [], True, False
            for body in batch:  # outside the lock: a slow pipe never holds up submit()
                if (finished := self._finish(body)) is not None:
                    self._emit(finished)
            with self._changed:
                self._busy = False
                self._changed.notify_all()
                self._changed.wait_for(lambda: self._hurry, self._interval)

    def _finish(self, body: Body) -> Body | None:
        """``body``'s values once the device has them. Polled, never awaited: a thread blocked
        on the device can hold up the training loop's own dispatch to it."""
        try:
            pending = [value for value in body.values() if on_device(value)]
            for value in pending:
                value.copy_to_host_async()
            while not all(value.is_ready() for value in pending):
                time.sleep(POLL_INTERVAL)
            return {name: plain(name, value) for name, value in body.items()}
        except Exception as err:  # the step itself failed: the training loop says so
            print(f"airflow-jax: a report was dropped: {err}", file=sys.stderr, flush=True)
            return None


def _supersedes(new: Body, old: Body) -> bool:
    """Whether ``new`` makes ``old`` pointless: the same metrics, in the same tenth of the
    run (a report that enters a new tenth is a milestone the task log shows)."""
    return new.keys() == old.keys() and tenth_of(
        new.get("step"), new.get(TOTAL_STEPS_KEY)
    ) == tenth_of(old.get("step"), old.get(TOTAL_STEPS_KEY))


_PLAIN = frozenset((int, float, str, bool, type(None)))
