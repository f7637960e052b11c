"""The checkpoint-freshness warning: a multi-host job that has gone ``warn_after`` seconds of
work without a new finalized checkpoint says so, once, with what a failure would now cost.

On a multi-host job every host waits for the slowest and any host's failure restarts them all
from the newest finalized step: work since then is lost on every host. The default, ten
minutes, bounds what one failure costs to ten minutes of work on each host.
Pure: the backends feed it what they find and read; it only decides and words the line.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_WARN_AFTER = 600.0  # seconds


@dataclass
class FreshnessAlarm:
    """Whether, and what, to warn about a job's newest finalized checkpoint.

    :param warn_after: seconds of work without a new finalized step before the warning.
    :param hosts: the job's hosts, every slice's: each loses the same work.
    :param expected: the job is known to checkpoint (an asset, a local tier); otherwise the
        warning waits for a first finalized step, so a job that never checkpoints is quiet.
    """

    warn_after: float
    hosts: int
    expected: bool = False
    newest: int | None = None  # the newest finalized step found
    newest_at: float | None = None  # when it was first found
    warned: bool = False

    def found(self, step: int | None, at: float) -> None:
        """The newest finalized step a listing found at ``at`` (None: none yet)."""
        if step is not None and (self.newest is None or step > self.newest):
            self.newest, self.newest_at = step, at

    def due(self, now: float, work_began: float | None, last_step: int | None) -> str | None:
        """The warning, the first time it is due, else None.

        :param now: the time of the look.
        :param work_began: when the current attempt's work began (its first report), if yet.
        :param last_step: the leader's last reported step, if any.
        """
        if self.warned or work_began is None or not (self.expected or self.newest is not None):
            return None
        since = max(work_began, self.newest_at or work_began)
        idle = now - since
        if idle < self.warn_after:
            return None
        self.warned = True
        newest = "none yet" if self.newest is None else f"the newest is step {self.newest}"
        progress = f"; the leader has reported step {last_step} since" if last_step else ""
        return (
            f"No new finalized checkpoint for {_minutes(idle)} of work ({newest}){progress}. "
            f"A failure now would cost about {_minutes(idle)} on each of {self.hosts} hosts "
            f"({_minutes(idle * self.hosts)} of host time) redone from the last checkpoint. "
            f"Save checkpoints more often, or raise checkpoint_warn_after (now "
            f"{_minutes(self.warn_after)}) if saving this rarely is intended. (Said once a try.)"
        )


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"
