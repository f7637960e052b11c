"""What the scale benchmarks share: a probe of the emulator loop's lag, CPU and memory
readings, percentiles."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any


class LagProbe(threading.Thread):
    """How late the emulator's loop answers, sampled every ``every`` seconds: when it lags,
    so does every watch event it sends, whatever the triggerer does."""

    def __init__(self, emulator: Any, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.emulator, self.every = emulator, every
        self.lags: list[float] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            asked = time.monotonic()
            self.emulator.call(lambda: None)
            self.lags.append(time.monotonic() - asked)


class GcClock:
    """The cyclic garbage collector's time in this process while entered: a full collection
    stops everything else in it (at N = 10,000: 1-1.5 s each in the triggerer, 4.6-6.6 s in
    the emulator)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full: list[tuple[float, float]] = []  # (monotonic time at its end, seconds)
        self._began = 0.0

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self._clock)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._clock)

    def _clock(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        spent = time.perf_counter() - self._began
        self.seconds += spent
        if info["generation"] == 2:
            self.full.append((time.monotonic(), spent))


def cpu_between(samples: list[tuple[float, float]], since: float, until: float) -> float:
    """CPU seconds spent between two moments, from (time, CPU so far) samples."""

    def at(moment: float) -> float:
        return next((cpu for t, cpu in samples if t >= moment), samples[-1][1])

    return at(until) - at(since)


def cpu_share_within(samples: list[tuple[float, float]], since: float, until: float) -> float:
    """The share of one core spent between the first sample at or after ``since`` and the
    last at or before ``until``: a phase's own, not the next phase's first half-second (at
    N = 10,000 the first ends' work read as 2 % of a core of "waiting")."""
    inside = [(t, cpu) for t, cpu in samples if since <= t <= until]
    (t0, cpu0), (t1, cpu1) = inside[0], inside[-1]
    return (cpu1 - cpu0) / (t1 - t0)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))] if ordered else float("nan")


def rss_kib(field: str = "VmRSS") -> int:
    """This process's resident set now (``VmHWM``: its peak), in KiB.

    The peak is not ``getrusage``'s ``ru_maxrss``: Linux carries that across ``execve``
    from the forked copy of the parent, so a child started by a bench holding 1.9 GiB
    reported a 1.9 GiB peak of its own. ``VmHWM`` is the new program's alone."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(f"{field}:"))
