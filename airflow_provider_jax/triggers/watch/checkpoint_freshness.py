"""Looks, beside a JobSet's wait, for the newest finalized checkpoint of a multi-host job, and
warns once in the task log when the work has gone too long without one
(``reporting.checkpoint_freshness``). One listing a minute at most: the same query as the
checkpoint sensor's, never more than one at a time, and a failed look is only a debug line.
:class:`FreshnessLook` is one look's bookkeeping, which the local backend's wait shares."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from airflow_provider_jax.checkpoints import CheckpointQuery, FinalizedStep, afind_newest_finalized
from airflow_provider_jax.contract.watch_options import WatchOptions
from airflow_provider_jax.reporting.checkpoint_freshness import FreshnessAlarm
from airflow_provider_jax.triggers.watch.run_clock import RunClock

MAX_INTERVAL = 60.0  # s between listings


class FreshnessLook:
    """What a look lists and how it tells the result, wherever it waits.

    :param options: the wait's options (``checkpoint_dir``, ``checkpoint_warn_after``, hosts).
    :param gcp_conn_id: the connection that lists ``gs://`` checkpoints.
    """

    def __init__(self, options: WatchOptions, gcp_conn_id: str = "google_cloud_default") -> None:
        assert options.checkpoint_warn_after and options.checkpoint_dir
        self.alarm = FreshnessAlarm(
            options.checkpoint_warn_after, options.hosts, options.checkpoints_expected
        )
        self.query = CheckpointQuery(options.checkpoint_dir, gcp_conn_id=gcp_conn_id)
        # A quarter of warn_after, at most a minute: the warning comes within that late.
        self.interval = min(options.checkpoint_warn_after / 4, MAX_INTERVAL)

    def listed(
        self,
        newest: FinalizedStep | Exception | None,
        work: tuple[float | None, int | None],
        log: Any,
    ) -> None:
        """A listing's result (or why it failed) and the attempt's work (when it began, its
        last step): warn if it is due."""
        if isinstance(newest, Exception):  # the run matters, not this look
            log.debug("Checkpoint freshness: %s could not be listed: %s", self.query, newest)
        else:
            self.alarm.found(None if newest is None else newest.step, time.time())
        if line := self.alarm.due(time.time(), *work):
            log.warning("%s", line)


class CheckpointFreshness:
    """The trigger's looks, on the event loop until :meth:`stop`.

    :param options: the wait's options.
    :param clock: the run's clock: when the attempt's work began, the leader's last step.
    :param log: the task log.
    :param gcp_conn_id: the connection that lists ``gs://`` checkpoints.
    """

    def __init__(self, options: WatchOptions, clock: RunClock, log: Any, gcp_conn_id: str) -> None:
        self.look = FreshnessLook(options, gcp_conn_id)
        self.clock, self.log = clock, log
        self._task = asyncio.create_task(self._run(), name="jax-checkpoint-freshness")

    async def _run(self) -> None:
        look = self.look
        while not look.alarm.warned:
            try:
                newest: FinalizedStep | Exception | None = await afind_newest_finalized(look.query)
            except Exception as err:
                newest = err
            look.listed(newest, self.clock.work_began(), self.log)
            await asyncio.sleep(look.interval)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
