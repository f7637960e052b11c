"""What the scale benchmarks share: a probe of the emulator loop's lag, CPU and memory
readings, percentiles."""

from __future__ import annotations

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


def cpu_between(samples: list[tuple[float, float]], since: float, until: float) -> float:
    """CPU seconds spent between two moments, from (time, CPU so far) samples."""

    def at(moment: float) -> float:
        return next((cpu for t, cpu in samples if t >= moment), samples[-1][1])

    return at(until) - at(since)


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
