"""The checkpoint-freshness warning for a job the local backend runs: the trigger's look
(``triggers/watch/checkpoint_freshness``), made from the backend's waiting loop."""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_jax.backends.watch_options import WatchOptions
from airflow_provider_jax.checkpoints import CheckpointQuery, find_newest_finalized
from airflow_provider_jax.reporting.checkpoint_freshness import FreshnessAlarm
from airflow_provider_jax.reporting.goodput import GoodputClock
from airflow_provider_jax.triggers.watch.checkpoint_freshness import look_interval


class CheckpointLook:
    """Looks at most every :func:`look_interval` when :meth:`tick` is called.

    :param options: the wait's options (``checkpoint_dir``, ``checkpoint_warn_after``, hosts).
    :param clock: the run's goodput clock: when an attempt's work began, its last step.
    """

    def __init__(self, options: WatchOptions, clock: GoodputClock) -> None:
        assert options.checkpoint_warn_after and options.checkpoint_dir
        self.alarm = FreshnessAlarm(
            options.checkpoint_warn_after, options.hosts, options.checkpoints_expected
        )
        self.query = CheckpointQuery(options.checkpoint_dir)
        self.clock = clock
        self.interval = look_interval(options.checkpoint_warn_after)
        self._next = 0.0

    def tick(self, attempt: int, log: Any) -> None:
        now = time.monotonic()
        if self.alarm.warned or now < self._next:
            return
        self._next = now + self.interval
        try:
            newest = find_newest_finalized(self.query)
        except Exception as err:  # the run matters, not this look
            log.debug("Checkpoint freshness: %s could not be listed: %s", self.query, err)
        else:
            self.alarm.found(None if newest is None else newest.step, time.time())
        began, step = self.clock.work_began(attempt)
        if line := self.alarm.due(time.time(), began, step):
            log.warning("%s", line)
