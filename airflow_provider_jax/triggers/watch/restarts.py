"""Say in the task log when a slice restarts, why and on which host, while the trigger waits.

JobSet counts a restart in ``status.restarts`` before it deletes the old attempt's Jobs, so on
seeing the count grow the old attempt's failed pods are listed once (one request per restart)
and the culprit named: ``restart 1/3 after a disruption on [0/1]: exited with code 143``.
If the garbage collector was faster, the line says the cause was not visible. An in-place
restart keeps the pods (JobSet counts it apart from ``status.restarts``;
:func:`~airflow_provider_jax.manifest.status.restarts` adds the two): its culprit is the pod
whose program's last run ended on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_jax.hooks.api_errors import explain
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.manifest import status
from airflow_provider_jax.reporting.failures import ProcessFailure, restart_line


class RestartLog:
    """Logs each restart of one JobSet once, and keeps the lines for the final event."""

    def __init__(
        self,
        hook: AsyncJobSetOperations,
        name: str,
        namespace: str,
        log: logging.Logger | Any,
        lines: list[str],
    ) -> None:
        self.hook, self.name, self.namespace, self.log = hook, name, namespace, log
        # From 0: a trigger that starts late (or again, after a triggerer restart) still says
        # how often the slice restarted before it looked; only the latest cause is knowable.
        self.seen = 0
        self.lines = lines  # the caller's: it outlives a wait that ends by an exception

    async def update(self, jobset: Mapping[str, Any]) -> list[tuple[int, ProcessFailure | None]]:
        """Log the restarts not seen yet; each ended attempt with its culprit, if visible."""
        restarts = status.restarts(jobset)
        if restarts <= self.seen:
            return []
        limit = ((jobset.get("spec") or {}).get("failurePolicy") or {}).get("maxRestarts", 0)
        ended: list[tuple[int, ProcessFailure | None]] = []
        in_place = status.restarts_in_place(jobset)
        for attempt in range(self.seen + 1, restarts + 1):
            culprit = await self._culprit(attempt - 1, in_place) if attempt == restarts else None
            line = restart_line(attempt, limit, culprit, in_place)
            self.lines.append(line)
            self.log.warning("JobSet %s/%s: %s", self.namespace, self.name, line)
            ended.append((attempt - 1, culprit))
        self.seen = restarts
        return ended

    async def _culprit(self, attempt: int, in_place: bool) -> ProcessFailure | None:
        try:
            pods = await self.hook.list_jobset_pods(self.name, self.namespace)
        except Exception as err:  # only a log line: the wait goes on
            self.log.warning("Could not read the pods of the restarted attempt: %s", explain(err))
            return None
        # In place, the pods stay (their attempts move one by one): the culprit is the one
        # whose program ended on its own, whichever attempt its agent has reached since.
        failed = (
            status.restarted_in_place(pods)
            if in_place
            else status.failed_pods(pods, attempt=attempt)
        )
        return status.pod_failure(failed[0]) if failed else None
