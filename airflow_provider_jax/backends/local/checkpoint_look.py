"""The checkpoint-freshness warning for a job the local backend runs: the trigger's look
(``triggers/watch/checkpoint_freshness``), made from the backend's waiting loop."""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_jax.checkpoints import FinalizedStep, find_newest_finalized
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.reporting.goodput import GoodputClock
from airflow_provider_jax.triggers.watch.checkpoint_freshness import FreshnessLook


class CheckpointLook:
    """Looks at most every ``interval`` when :meth:`tick` is called.

    :param options: the wait's options (``checkpoint_dir``, ``checkpoint_warn_after``, hosts).
    :param clock: the run's goodput clock: when an attempt's work began, its last step.
    """

    def __init__(self, options: WatchOptions, clock: GoodputClock) -> None:
        self.look = FreshnessLook(options)
        self.clock = clock
        self._next = 0.0

    def tick(self, attempt: int, log: Any) -> None:
        now = time.monotonic()
        if self.look.alarm.warned or now < self._next:
            return
        self._next = now + self.look.interval
        try:
            newest: FinalizedStep | Exception | None = find_newest_finalized(self.look.query)
        except Exception as err:
            newest = err
        self.look.listed(newest, self.clock.work_began(attempt), log)
