"""Time a JobSet's run for the goodput ledger from what the trigger already reads: the
JobSet's own changes (created, all pods ready, restarts, the end) and the leader's log lines
(each carries kubelet's timestamp). It makes no request of its own.

A trigger that starts late (after a triggerer restart) times what it sees from then on; the
JobSet's ``creationTimestamp`` still anchors the wall time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.manifest import status
from airflow_provider_jax.reporting.goodput import GoodputClock, chips, epoch

UNKNOWN = "unknown"  # the class of a restart whose failed pods were already gone


class RunClock:
    """The :class:`GoodputClock` of one JobSet, fed by its trigger."""

    def __init__(self) -> None:
        self.clock: GoodputClock | None = None
        self.attempt = 0
        self.ended: float | None = None
        # Where it runs: the capacity its pods select, Kueue's flavor and ClusterQueue, the
        # MultiKueue worker cluster; in the ledger as "admission".
        self.admission: dict[str, str] = {}
        self.size: tuple[int, int] | None = None  # an elastic job's: (slices now, asked for)

    def seen(self, jobset: Mapping[str, Any]) -> None:
        """A JobSet change: note its creation, and when an attempt's pods all run."""
        now = time.time()
        if self.clock is None:
            created = epoch((jobset.get("metadata") or {}).get("creationTimestamp"))
            self.clock = GoodputClock(created=min(created or now, now), chips=chips(jobset))
            if self.size is not None:
                self.clock.resize(*self.size)
        self.attempt = status.restarts(jobset)
        if "capacity" not in self.admission and (capacity := status.running_capacity(jobset)):
            self.admission["capacity"] = capacity
        if status.all_ready(jobset) and status.terminal_state(jobset) is None:
            self.clock.begin(self.attempt, now)

    def admitted(self, facts: Mapping[str, str]) -> None:
        """What Kueue says of where the JobSet runs (``flavor``, ``cluster_queue``, ``worker``)."""
        self.admission.update({k: v for k, v in facts.items() if v})

    def restarted(self, attempt: int, kind: str | None) -> None:
        """Attempt ``attempt`` failed (a ``kind`` of failure) and the JobSet restarted."""
        if self.clock is not None:
            self.clock.end(attempt, time.time(), kind or UNKNOWN)

    def leader_line(
        self, attempt: int, stamp: str, text: str, report: dict[str, Any] | None
    ) -> None:
        """A line of the leader's log from restart ``attempt`` (``report``: the progress
        report in it, if any), or where it resumed from."""
        if self.clock is None:
            return
        at = min(epoch(stamp) or time.time(), time.time())
        if report is not None:
            self.clock.report(attempt, report.get("step"), at)
        else:
            self.clock.leader_line(attempt, text, at)

    def work_began(self) -> tuple[float | None, int | None]:
        """When the current attempt's work began (its first report), and the leader's last
        reported step: (None, None) before it reports."""
        return (None, None) if self.clock is None else self.clock.work_began(self.attempt)

    def finish(self, failure: str | None) -> None:
        """The JobSet ended now (``failure``: how, if it failed)."""
        if self.ended is None:
            self.ended = time.time()
            if self.clock is not None:
                self.clock.end(self.attempt, self.ended, failure)

    def ledger(self) -> dict[str, Any] | None:
        """The ledger up to the end (lines that came after it still count)."""
        if self.clock is None:
            return None
        ledger = self.clock.ledger(self.ended or time.time())
        return {**ledger, "admission": dict(self.admission)} if self.admission else ledger
