"""How a running job is watched, and what of it reaches the task log: one dataclass, part of
the backend contract, carried whole from the operator to whichever backend runs the job and
into the deferred trigger.

An option of this kind is added in three places: the operator's signature and ``:param``, a
field here, and the one module that reads it. The layers between (the operator's settings,
both backends, the trigger's kwargs and its serialized row) carry the dataclass as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from airflow_provider_jax.arguments import one_of, positive_seconds
from airflow_provider_jax.reporting.deadlines import Deadline, DeadlineWatch
from airflow_provider_jax.reporting.host_logs import (
    STREAM_ALL,
    STREAM_LEADER,
    STREAM_LOGS,
    STREAM_NONE,
)

# The fields every JobSetTrigger row has carried since 0.1; the others are written only when
# they differ from their default, so a row stays one that the previous release can load.
ALWAYS_SERIALIZED = ("poll_interval", "retry_budget", "log_lines")


@dataclass(frozen=True)
class WatchOptions:
    """How a JobSet is waited on.

    :param poll_interval: seconds between status reads when the identity may not watch.
    :param retry_budget: seconds of transient API errors tolerated before the wait gives up.
    :param log_lines: the most log lines per host (and progress reports) in the task log.
    :param queue_timeout: seconds from creating the JobSet to ``queue_until``, or None.
    :param queue_until: ``running`` (every pod running) or ``admitted`` (by Kueue).
    :param stream_logs: whose output reaches the task log: ``leader``, ``all`` or ``none``.
    :param checkpoint_warn_after: seconds of work without a new finalized checkpoint before
        the task log warns, once (multi-host jobs only); None: never.
    :param checkpoint_dir: where the job's Orbax checkpoints go (the rendered
        ``<output_dir>/checkpoints``), or None.
    :param hosts: the job's hosts, every slice's.
    :param checkpoints_expected: the job is known to checkpoint before a first step is seen.
    :param deadlines: the try's evaluated deadlines (``reporting/deadlines.py`` rows), which
        the live ETA is held against.
    """

    poll_interval: float = 10.0
    retry_budget: float = 600.0
    log_lines: int = 1000
    queue_timeout: float | None = None
    queue_until: str = "running"
    stream_logs: str = STREAM_LEADER
    checkpoint_warn_after: float | None = None
    checkpoint_dir: str | None = None
    hosts: int = 1
    checkpoints_expected: bool = False
    deadlines: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "deadlines", tuple(dict(d) for d in self.deadlines))
        positive_seconds("poll_interval", self.poll_interval)
        positive_seconds("retry_budget", self.retry_budget)
        one_of("stream_logs", self.stream_logs, STREAM_LOGS)
        if self.checkpoint_warn_after is not None:
            positive_seconds("checkpoint_warn_after", self.checkpoint_warn_after)

    @property
    def watches_checkpoints(self) -> bool:
        """Whether the wait looks for the checkpoints' freshness."""
        return bool(self.checkpoint_warn_after and self.checkpoint_dir and self.hosts > 1)

    @property
    def every_host(self) -> bool:
        """Whether every host's lines reach the task log, not only the leader's."""
        return self.stream_logs == STREAM_ALL

    @property
    def shows_progress(self) -> bool:
        """Whether the leader's progress reaches the task log at all."""
        return self.stream_logs != STREAM_NONE

    @property
    def streams_pod_logs(self) -> bool:
        """Whether any pod's log is read while the job runs."""
        return self.shows_progress and self.log_lines > 0

    def shows_host(self, leader: bool) -> bool:
        """Whether a host's lines (the leader's when ``leader``) go to the task log."""
        return self.every_host or (leader and self.shows_progress)

    @classmethod
    def of_task(cls, task_id: str, **options: Any) -> WatchOptions:
        """``task_id``'s options, or a ValueError at parse that names the task and argument."""
        try:
            return cls(**options)
        except ValueError as err:
            raise ValueError(f"{task_id}: {err}") from None

    def as_row(self) -> dict[str, Any]:
        """The trigger kwargs that carry these options (plain JSON values)."""
        default = WatchOptions()
        row = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in ALWAYS_SERIALIZED or getattr(self, f.name) != getattr(default, f.name)
        }
        if "deadlines" in row:
            row["deadlines"] = [dict(d) for d in self.deadlines]
        return row

    def deadline_watch(self) -> DeadlineWatch:
        """The deadlines, each to be told once when the ETA passes it."""
        return DeadlineWatch(Deadline.of_row(d) for d in self.deadlines)
