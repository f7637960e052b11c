"""The goodput ledger: where one task's wall time went, and what its chips cost.

Both backends feed a :class:`GoodputClock` with what they already see (no extra requests): when
each restart attempt's pods were all running, when the leader reported each step, which step an
attempt resumed from, and how an attempt ended. :meth:`GoodputClock.ledger` then splits the
wall time (``created`` to the end) into:

- ``queued_s``: until the first attempt's pods all ran (admitted and scheduled);
- ``startup_s``: from each attempt's start to its first ``report()``, or, for a function that
  never reports, to its call (the runtime's own start-up: packages, ``jax.distributed``, data);
- ``productive_s``: from the first report to the end, or, for an attempt that failed, to the
  step the next attempt resumed from (work a checkpoint kept);
- ``lost_s``: from that step (or the attempt's first report, if nothing was kept) to the
  restart: the work redone and the time the slice was down.

An elastic job (``min_slices``) that runs on fewer slices than it asked for is productive at
its fraction: of a stretch of work on 1 of 2 slices, half counts as ``productive_s`` and half
as ``reduced_s``. ``by_slices`` says how long each size ran (each attempt's start to the next
one's), and ``chip_hours`` counts the chips each size held.

``phases`` lists these stretches in order, with their epoch seconds and restart attempt, for
the spans a try's trace gets (``metrics/spans.py``). ``goodput`` is ``productive_s / wall_s`` (Google's ``ml-goodput-measurement`` idea, per task);
``chip_hours`` is chips times the time the chips were held (wall less queue). A program that
never calls ``report()`` has its attempts' start-up end at its call, and its work start there;
an older runtime that prints no call line leaves it no start-up to tell apart.
"""

from __future__ import annotations

import bisect
import datetime
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.runtime.messages import is_calling_line, parse_resumed

CHIP_RESOURCES = ("google.com/tpu", "nvidia.com/gpu")
MAX_STEP_MARKS = 2048  # step times kept per attempt; thinned beyond, so memory stays bounded
MAX_PHASES = 64  # the newest phases the ledger keeps (queued, then 3 per restart attempt)
GOODPUT_XCOM_KEY = "goodput"


@dataclass
class AttemptClock:
    """One restart attempt's times (epoch seconds)."""

    started: float
    first_report: float | None = None
    called: float | None = None  # when the runtime called the user's function
    ended: float | None = None
    failure: str | None = None  # the class of the failure that ended it
    slices: int | None = None  # an elastic job's size in this attempt
    share: float = 1.0  # its slices over the slices asked for
    resumed_from: int | None = None
    marks: list[tuple[int, float]] = field(default_factory=list)  # (step, when reported)

    def ran_at(self, at: float) -> None:
        """It ran at ``at``: whoever saw its start later (a trigger) saw it late."""
        self.started = min(self.started, at)

    def mark(self, step: int | None, at: float) -> None:
        self.ran_at(at)
        if self.first_report is None:
            self.first_report = at
        if not isinstance(step, int) or (self.marks and step <= self.marks[-1][0]):
            return
        self.marks.append((step, at))
        if len(self.marks) > MAX_STEP_MARKS:
            thinned = self.marks[::2]
            if thinned[-1] != self.marks[-1]:
                thinned.append(self.marks[-1])
            self.marks = thinned

    def reached(self, step: int) -> float | None:
        """When this attempt reported ``step`` (or, thinned, the newest step before it)."""
        i = bisect.bisect_right(self.marks, (step, float("inf")))
        return self.marks[i - 1][1] if i else None


@dataclass
class GoodputClock:
    """What a backend saw of one JobSet run, by restart attempt.

    :param created: when the JobSet was created (epoch seconds).
    :param chips: accelerator chips (TPU chips or GPUs) of all its pods.
    """

    created: float
    chips: int
    attempts: dict[int, AttemptClock] = field(default_factory=dict)
    slices: int | None = None  # an elastic job's size now (attempts begun from here on)
    full_slices: int | None = None  # ... and the size it asked for

    def resize(self, slices: int, full_slices: int) -> None:
        """The attempts from here on run on ``slices`` of ``full_slices``."""
        self.slices, self.full_slices = slices, full_slices

    def next_attempt(self) -> int:
        """The number the next JobSet's first attempt goes on with in this clock."""
        return max(self.attempts, default=-1) + 1

    def begin(self, attempt: int, at: float) -> AttemptClock:
        """Attempt ``attempt`` has all its pods running (once; later calls change nothing)."""
        if attempt not in self.attempts:
            share = self.slices / self.full_slices if self.slices and self.full_slices else 1.0
            self.attempts[attempt] = AttemptClock(started=at, slices=self.slices, share=share)
        return self.attempts[attempt]

    def report(self, attempt: int, step: int | None, at: float) -> None:
        self.begin(attempt, at).mark(step, at)

    def leader_line(self, attempt: int, line: str, at: float) -> None:
        """A line of the leader's log (not a report): where it resumed from, or where the
        runtime called the user's function."""
        if (step := parse_resumed(line)) is not None:
            self.resumed(attempt, step, at)
        elif is_calling_line(line):
            self.called(attempt, at)

    def called(self, attempt: int, at: float) -> None:
        """The runtime called the user's function: its own start-up ended at ``at``."""
        clock = self.begin(attempt, at)
        clock.ran_at(at)
        if clock.called is None:
            clock.called = at

    def resumed(self, attempt: int, step: int, at: float) -> None:
        clock = self.begin(attempt, at)
        clock.ran_at(at)
        clock.resumed_from = step

    def end(self, attempt: int, at: float, failure: str | None = None) -> None:
        clock = self.begin(attempt, at)
        if clock.ended is None:
            clock.ended, clock.failure = at, failure

    def work_began(self, attempt: int) -> tuple[float | None, int | None]:
        """When attempt ``attempt``'s work began (its first report) and its last reported
        step: (None, None) before it reports."""
        now = self.attempts.get(attempt)
        if now is None or now.first_report is None:
            return None, None
        return now.first_report, now.marks[-1][0] if now.marks else None

    def ledger(self, ended: float) -> dict[str, Any]:
        """The ledger at ``ended`` (epoch seconds), as plain JSON."""
        wall = max(ended - self.created, 0.0)
        order = sorted(self.attempts)
        queued = min(self.attempts[order[0]].started - self.created, wall) if order else wall
        totals: defaultdict[str, float] = defaultdict(float)
        phases: list[dict[str, Any]] = []
        if order:
            phases.append(_phase("queued", None, self.created, self.created + queued))

        sizes: defaultdict[int, float] = defaultdict(float)
        unheld = 0.0  # chip time of slices an elastic job ran without

        def add(phase: str, attempt: int, start: float, end: float) -> None:
            share = self.attempts[attempt].share
            if phase == "productive" and share < 1.0:
                totals["reduced"] += _span(start, end) * (1.0 - share)
            totals[phase] += _span(start, end) * (share if phase == "productive" else 1.0)
            if end > start:
                phases.append(_phase(phase, attempt, start, end))

        restarts: Counter[str] = Counter()
        for i, number in enumerate(order):
            now = self.attempts[number]
            after = self.attempts[order[i + 1]] if i + 1 < len(order) else None
            stop = now.ended or (after.started if after else ended)
            restart = after.started if after else stop
            if now.slices is not None:
                sizes[now.slices] += _span(now.started, restart)
                unheld += _span(now.started, restart) * (1.0 - now.share)
            begun = now.first_report if now.first_report is not None else now.called
            if begun is None:  # no report, no call line: nothing to tell start-up from work
                if now.failure is None:
                    add("productive", number, now.started, stop)
                else:
                    add("startup", number, now.started, stop)
                    add("lost", number, stop, restart)
            elif now.failure is None:
                add("startup", number, now.started, begun)
                add("productive", number, begun, stop)
            else:
                kept = after.resumed_from if after else None
                fresh = kept is not None and (now.resumed_from is None or kept > now.resumed_from)
                saved = (now.reached(kept) if fresh and kept is not None else None) or begun
                add("startup", number, now.started, begun)
                add("productive", number, begun, saved)
                add("lost", number, saved, restart)
            if now.failure is not None and after is not None:
                restarts[now.failure] += 1
        startup, productive, lost = totals["startup"], totals["productive"], totals["lost"]
        last = self.attempts[order[-1]] if order else None
        held = max(wall - queued - unheld, 0.0)
        ledger = {
            "wall_s": round(wall, 2),
            "queued_s": round(max(queued, 0.0), 2),
            "startup_s": round(startup, 2),
            "productive_s": round(productive, 2),
            "lost_s": round(lost, 2),
            "restarts": dict(sorted(restarts.items())),
            "resumed_from": last.resumed_from if last else None,
            "chips": self.chips,
            "chip_hours": round(self.chips * held / 3600, 4),
            "goodput": round(productive / wall, 3) if wall else 0.0,
            "phases": phases[-MAX_PHASES:],
        }
        if sizes:  # an elastic job: how long it ran at each size, and the work it ran without
            ledger["reduced_s"] = round(totals["reduced"], 2)
            ledger["by_slices"] = {str(n): round(t, 2) for n, t in sorted(sizes.items())}
            ledger["full_slices"] = self.full_slices
        return ledger


def _phase(phase: str, attempt: int | None, start: float, end: float) -> dict[str, Any]:
    """One stretch of the wall time: its kind, its restart attempt, its epoch seconds."""
    return {"phase": phase, "attempt": attempt, "start": round(start, 3), "end": round(end, 3)}


def _span(start: float, end: float) -> float:
    """Seconds from ``start`` to ``end``; never negative (clocks of two machines meet here)."""
    return max(end - start, 0.0)


def summary_line(ledger: Mapping[str, Any]) -> str:
    """The ledger as one task-log line."""
    restarts = ", ".join(f"{n} {kind}" for kind, n in (ledger.get("restarts") or {}).items())
    resumed = ledger.get("resumed_from")
    return (
        f"goodput {ledger['goodput']:.1%}: {ledger['wall_s']:.1f}s wall = "
        f"{ledger['queued_s']:.1f}s queued + {ledger['startup_s']:.1f}s start-up + "
        f"{ledger['productive_s']:.1f}s productive + {ledger['lost_s']:.1f}s lost"
        + (f" + {ledger['reduced_s']:.1f}s without lost slices" if "reduced_s" in ledger else "")
        + f" (+ teardown); restarts: {restarts or 'none'}"
        + (f"; slices: {_sizes(ledger)}" if "by_slices" in ledger else "")
        + (f"; resumed from step {resumed}" if resumed is not None else "")
        + f"; {ledger['chips']} chips, {ledger['chip_hours']:.4f} chip-hours"
    )


SUMMED = ("wall_s", "queued_s", "startup_s", "productive_s", "lost_s", "reduced_s")


def merged(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger of two JobSets of one try, one after the other (an elastic job on
    Kubernetes, made again at another size; the local backend goes on with one clock): their
    sums, the sizes, and one ``resize`` restart between them."""
    if not before:
        return dict(after)
    out = dict(after)
    for key in SUMMED:
        if key in before or key in after:
            out[key] = round(before.get(key, 0.0) + after.get(key, 0.0), 2)
    out["chip_hours"] = round(before.get("chip_hours", 0.0) + after.get("chip_hours", 0.0), 4)
    restarts = Counter(before.get("restarts") or {}) + Counter(after.get("restarts") or {})
    restarts["resize"] += 1
    out["restarts"] = dict(sorted(restarts.items()))
    sizes = Counter(before.get("by_slices") or {}) + Counter(after.get("by_slices") or {})
    if sizes:
        out["by_slices"] = {n: round(t, 2) for n, t in sorted(sizes.items())}
    out["phases"] = [*(before.get("phases") or ()), *(after.get("phases") or ())][-MAX_PHASES:]
    out["goodput"] = round(out["productive_s"] / out["wall_s"], 3) if out["wall_s"] else 0.0
    return out


def _sizes(ledger: Mapping[str, Any]) -> str:
    """``2 for 40.1s, 1 for 31.0s``: how long an elastic job ran at each size."""
    full = ledger.get("full_slices")
    parts = [
        f"{n}{f'/{full}' if full else ''} for {t:.1f}s" for n, t in ledger["by_slices"].items()
    ]
    return ", ".join(reversed(parts))


def chips(jobset: Mapping[str, Any]) -> int:
    """TPU chips or GPUs that all of a JobSet's pods ask for (manifest or API object)."""
    total = 0
    for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or ():
        job = (rjob.get("template") or {}).get("spec") or {}
        pods = int(rjob.get("replicas", 1)) * int(job.get("parallelism", 1))
        containers = ((job.get("template") or {}).get("spec") or {}).get("containers") or ()
        for container in containers:
            limits = (container.get("resources") or {}).get("limits") or {}
            total += pods * sum(int(limits.get(name, 0)) for name in CHIP_RESOURCES)
    return total


def epoch(stamp: str | None) -> float | None:
    """An RFC 3339 time from the API (``creationTimestamp``, a log line's nanosecond stamp)
    as epoch seconds; None when absent or unreadable."""
    if not stamp:
        return None
    text = stamp.strip().replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # at most microseconds for fromisoformat
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[: min(digits, 6)]}{rest[digits:]}"
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None
