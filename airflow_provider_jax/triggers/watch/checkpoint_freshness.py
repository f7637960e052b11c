"""Looks, beside a JobSet's wait, for the newest finalized checkpoint of a multi-host job, and
warns once in the task log when the work has gone too long without one
(``reporting.checkpoint_freshness``). One listing a minute at most: the same query as the
checkpoint sensor's, never more than one at a time, and a failed look is only a debug line."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from airflow_provider_jax.backends.watch_options import WatchOptions
from airflow_provider_jax.checkpoints import CheckpointQuery, afind_newest_finalized
from airflow_provider_jax.reporting.checkpoint_freshness import FreshnessAlarm
from airflow_provider_jax.triggers.watch.run_clock import RunClock

MAX_INTERVAL = 60.0  # s between listings


def look_interval(warn_after: float) -> float:
    """A quarter of ``warn_after``, at most a minute: the warning comes within that late."""
    return min(warn_after / 4, MAX_INTERVAL)


class CheckpointFreshness:
    """The task's freshness look, running until :meth:`stop`.

    :param options: the wait's options (``checkpoint_dir``, ``checkpoint_warn_after``, hosts).
    :param clock: the run's clock: when the attempt's work began, the leader's last step.
    :param log: the task log.
    :param gcp_conn_id: the connection that lists ``gs://`` checkpoints.
    """

    def __init__(self, options: WatchOptions, clock: RunClock, log: Any, gcp_conn_id: str) -> None:
        assert options.checkpoint_warn_after and options.checkpoint_dir
        self.alarm = FreshnessAlarm(
            options.checkpoint_warn_after, options.hosts, options.checkpoints_expected
        )
        self.query = CheckpointQuery(options.checkpoint_dir, gcp_conn_id=gcp_conn_id)
        self.clock, self.log = clock, log
        self.interval = look_interval(options.checkpoint_warn_after)
        self._task = asyncio.create_task(self._run(), name="jax-checkpoint-freshness")

    async def _run(self) -> None:
        while not self.alarm.warned:
            try:
                newest = await afind_newest_finalized(self.query)
            except Exception as err:  # the run matters, not this look
                self.log.debug("Checkpoint freshness: %s could not be listed: %s", self.query, err)
            else:
                self.alarm.found(None if newest is None else newest.step, time.time())
            began, step = self.clock.work_began()
            if line := self.alarm.due(time.time(), began, step):
                self.log.warning("%s", line)
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
