"""Progress lines for the task log: ``step 1200/10000 (12%) · 3.1 steps/s · ETA 47m: loss=0.03``.

The leader's reports arrive in the trigger (from its pod log, stamped by the kubelet) or in the
local backend (stamped when read). This turns them into lines a person can act on, at a
bounded rate: the first report, then at most one per ``every`` seconds of the job's own clock,
each report that crosses a tenth of ``total_steps``, and the last one when the log ends. The
rate is measured over the last ``window`` seconds, so a slow start or a restart stops skewing
the ETA once it is past.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from airflow_provider_jax.runtime.messages import (
    TOTAL_STEPS_KEY,
    format_report,
    is_count,
    tenth_of,
)

SHOW_EVERY_S = 10.0  # seconds of the job's clock between progress lines
RATE_WINDOW_S = 60.0  # the steps/s shown are over the reports of the last minute


def kubelet_time(stamp: str) -> float | None:
    """Epoch seconds of a kubelet log timestamp (RFC 3339, nanoseconds), or None."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    try:
        seconds = datetime.fromisoformat(head + "+00:00").timestamp()
    except ValueError:
        return None
    return seconds + (float(f"0.{frac}") if frac.isdigit() else 0.0)


def eta_text(seconds: float) -> str:
    """``45s``, ``47m``, ``3h12m``, ``2d4h``: as precise as a person reads an ETA."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def rate_text(steps_per_s: float) -> str:
    """``120 steps/s``, ``3.1 steps/s``, ``0.25 steps/s``, or ``40 s/step`` for slow steps."""
    if steps_per_s >= 10:
        return f"{steps_per_s:.0f} steps/s"
    if steps_per_s >= 1:
        return f"{steps_per_s:.1f} steps/s"
    if steps_per_s >= 0.1:
        return f"{steps_per_s:.2f} steps/s"
    return f"{1 / steps_per_s:.0f} s/step"


class Progress:
    """The leader's reports of one job, as progress lines.

    :param every: seconds of the job's clock between two lines (the first is always shown).
    :param window: seconds of reports the rate is measured over.
    """

    def __init__(self, every: float = SHOW_EVERY_S, window: float = RATE_WINDOW_S) -> None:
        self.every, self.window = every, window
        self._seen: deque[tuple[float, int]] = deque()  # (time, step) within the window
        self._shown_at: float | None = None
        self._shown_tenth = -1
        self._held: Mapping[str, Any] | None = None  # the newest report not shown yet
        self._total: int | None = None  # the run's length in steps, once a report gave it

    def line(self, report: Mapping[str, Any], at: float) -> str | None:
        """The line to log for ``report`` made at ``at`` (epoch seconds), or None to skip it."""
        step, total = report.get("step"), report.get(TOTAL_STEPS_KEY)
        if not is_count(step):
            return format_report(dict(report))  # not a training step: nothing to pace or time
        if self._seen and step < self._seen[-1][1]:
            self._seen.clear()  # a restart resumed from an earlier step
        self._seen.append((at, step))
        self._total = total if is_count(total) else self._total
        while len(self._seen) > 2 and self._seen[1][0] <= at - self.window:
            self._seen.popleft()  # keeps one report from before the window: a rate spans it
        tenth = tenth_of(step, total)
        due = self._shown_at is None or at - self._shown_at >= self.every
        if not due and tenth <= self._shown_tenth:
            self._held = report
            return None
        self._shown_at, self._shown_tenth, self._held = at, max(tenth, self._shown_tenth), None
        return self.describe(report)

    def flush(self) -> str | None:
        """The newest report held back by the pacing, once: show it when the stream ends, so
        the log always ends on where the run got to."""
        held, self._held = self._held, None
        return None if held is None else self.describe(held)

    def rate(self) -> float | None:
        """Steps per second over the window, once two reports span some time."""
        if not self._seen:
            return None
        (t0, s0), (t1, s1) = self._seen[0], self._seen[-1]
        if t1 - t0 <= 0 or s1 <= s0:
            return None
        return (s1 - s0) / (t1 - t0)

    def finish_at(self) -> float | None:
        """When the run will reach its last step at the rate of now (epoch seconds), once
        the rate and the total are known: the ETA that deadlines are held against."""
        rate = self.rate()
        if rate is None or self._total is None:
            return None
        at, step = self._seen[-1]
        return at + max(self._total - step, 0) / rate

    @property
    def step(self) -> int | None:
        """The newest step reported."""
        return self._seen[-1][1] if self._seen else None

    @property
    def total(self) -> int | None:
        return self._total

    def describe(self, report: Mapping[str, Any]) -> str:
        """The report, with its total, percentage, rate and ETA where they are known."""
        step, total = report.get("step"), report.get(TOTAL_STEPS_KEY)
        extra: tuple[str, ...] = ()
        if (rate := self.rate()) is not None:
            extra = (rate_text(rate),)
            if is_count(step) and is_count(total) and total > step:
                extra += (f"ETA {eta_text((total - step) / rate)}",)
        return format_report(dict(report), extra)
