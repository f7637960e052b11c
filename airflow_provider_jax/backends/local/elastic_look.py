"""When a local elastic job (``min_slices``) changes size: the decisions, made from the
backend's waiting loop with the capacity it reads (``capacity.py``).

- Shrink: an attempt whose slices have had no capacity for ``shrink_after`` goes on with the
  slices that have, if that is at least ``min_slices``.
- Grow: while the job runs smaller, capacity for every slice is back, and a checkpoint newer
  than the newest at that moment is finalized: the job is made again at full size from it, so
  no more than the steps since that checkpoint are redone.
"""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_jax.checkpoints import CheckpointQuery, find_newest_finalized
from airflow_provider_jax.contract.elastic import ElasticSlices
from airflow_provider_jax.exceptions import SlicesChanged
from airflow_provider_jax.runtime.env import GREW, SHRUNK

LOOK_INTERVAL_S = 2.0  # between listings of the checkpoints while capacity is back


class ElasticLook:
    """One JobSet's size decisions.

    :param name: the JobSet's name, for the task log.
    :param elastic: the job's size policy, its size now and where it checkpoints.
    :param gcp_conn_id: the connection that lists ``gs://`` checkpoints.
    :param log: the task log.
    """

    def __init__(
        self,
        name: str,
        elastic: ElasticSlices,
        gcp_conn_id: str,
        log: Any,
    ) -> None:
        self.name, self.elastic, self.log = name, elastic, log
        assert elastic.checkpoint_dir is not None
        self.query = CheckpointQuery(elastic.checkpoint_dir, gcp_conn_id=gcp_conn_id)
        self._back: tuple[float, int | None] | None = None  # capacity back: when, newest step
        self._next_look = 0.0

    def newest_step(self) -> int | None:
        """The newest finalized step, or None (none yet, or the listing failed: the next
        look tries again)."""
        try:
            found = find_newest_finalized(self.query)
        except Exception as err:
            self.log.debug("Elastic slices: %s could not be listed: %s", self.query, err)
            return None
        return None if found is None else found.step

    def pending(self, since: float | None, available: float) -> None:
        """Raise :class:`SlicesChanged` when slices have waited for capacity since ``since``
        (monotonic) for ``shrink_after``, and the slices that have capacity are enough."""
        elastic = self.elastic
        if since is None or time.monotonic() - since < elastic.shrink_after:
            return
        to = elastic.shrinks_to(int(min(available, elastic.now)))
        if to is None:
            return
        raise SlicesChanged(to, SHRUNK, elastic.shrink_line(self.name, to, self.newest_step()))

    def running(self, available: float) -> None:
        """While every pod runs: raise :class:`SlicesChanged` once a smaller job has capacity
        for every slice again and a newer checkpoint is finalized since."""
        elastic = self.elastic
        if not elastic.grows(int(min(available, elastic.full))):
            if self._back is not None:
                self.log.info("%s", elastic.gone_line(self.name))
            self._back = None
            return
        now = time.monotonic()
        if now < self._next_look:
            return
        self._next_look = now + LOOK_INTERVAL_S
        step = self.newest_step()
        if self._back is None:
            self._back = (now, step)
            self.log.info("%s", elastic.back_line(self.name, step))
            return
        if step is not None and (self._back[1] is None or step > self._back[1]):
            raise SlicesChanged(elastic.full, GREW, elastic.grow_line(self.name, step))
