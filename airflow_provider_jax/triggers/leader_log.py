"""Follow process 0's log into the task log while a JobSet runs: progress reports as paced
lines with a rate and ETA (``progress.py``), other output as is, ``[slice/host]``-prefixed,
bounded in lines and line length.

It costs two requests per restart attempt (a pod list, then one long-lived log stream) and
never decides the task's outcome: any error here only ends the streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_jax import jobset_status as status
from airflow_provider_jax.hooks.jobset import AsyncJobSetHook, api_status, explain, is_transient
from airflow_provider_jax.progress import Progress, kubelet_time
from airflow_provider_jax.runtime.messages import parse_report

MAX_LINE = 1000  # characters of one log line shown in the task log
RETRY_DELAYS = (2, 5, 10, 30, 60)  # waits while the leader's container is not up yet
STREAM_RECHECK = 10  # seconds after a log stream ends before looking whether it only dropped


class LeaderLog:
    """Streams one JobSet's leader log into ``log`` while the trigger waits."""

    def __init__(
        self,
        hook: AsyncJobSetHook,
        name: str,
        namespace: str,
        *,
        max_lines: int,
        log: logging.Logger | Any,
        on_line: Callable[[Mapping[str, Any], str, str, dict[str, Any] | None], None] | None = None,
    ) -> None:
        self.hook, self.name, self.namespace = hook, name, namespace
        self.on_line = on_line  # (pod, kubelet's timestamp, text, its report) of each new line
        self.lines_left = self.reports_left = max_lines
        self.log = log
        self.progress = Progress()
        self._tag = "[0/0]"  # the followed pod's place; the leader's until its pod is seen
        self._changed = asyncio.Event()
        self._last_stamp = ""
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def update(self, jobset: Mapping[str, Any]) -> None:
        """Hear of a JobSet change: pods may have started, or a restart made new ones."""
        if status.has_started(jobset):
            self._changed.set()
            if self._task is None:
                self._task = asyncio.create_task(self._run(), name=f"leader-log-{self.name}")

    async def stop(self, grace: float = 0) -> None:
        """Stop streaming; with ``grace``, first let it show what is left of the finished
        leader's log, for at most that many seconds."""
        if self._task is None:
            return
        self._closing = True
        self._changed.set()
        if grace > 0:
            await asyncio.wait({self._task}, timeout=grace)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._show_held()

    def _show_held(self) -> None:
        """The newest report the pacing held back: the log ends on where the run got to."""
        if (held := self.progress.flush()) is not None and self.reports_left > 0:
            self.reports_left -= 1
            self.log.info("%s %s", self._tag, held)

    async def _next_change(self, delay: float | None = None) -> None:
        """Until the JobSet changes (or ``delay`` passes); at once when closing."""
        self._changed.clear()
        if not self._closing:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that
            # arrives as the event is set, which is just what stop() does.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._changed.wait()

    async def _run(self) -> None:
        ended: set[str] = set()  # leader pods whose log stream ran to its end
        leader_name: str | None = None
        waits = iter(RETRY_DELAYS)
        try:
            while self.lines_left > 0:
                if self._closing and (leader_name is None or leader_name in ended):
                    return  # the finished leader's log is all shown
                pods = await self.hook.list_jobset_pods(self.name, self.namespace)
                leader = status.leader_pod(pods) or {}
                leader_name = leader.get("metadata", {}).get("name")
                phase = leader.get("status", {}).get("phase")
                if leader_name is None or phase in (None, "Pending"):
                    if self._closing:
                        return  # it never started: no log to show
                    # Not up yet; re-check now and then, as a container can take a while.
                    await self._next_change(next(waits, None))
                    continue
                if leader_name in ended:
                    if phase in ("Succeeded", "Failed"):
                        await self._next_change()  # all shown: wait for a restart
                        continue
                    ended.discard(leader_name)  # still running: the stream had dropped
                waits = iter(RETRY_DELAYS)
                if await self._follow(leader):
                    ended.add(leader_name)
                    # Usually the container exited, which the JobSet's status soon shows.
                    await self._next_change(STREAM_RECHECK)
                else:
                    await asyncio.sleep(1)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning("Stopped streaming the leader's log: %s", explain(err))

    async def _follow(self, pod: Mapping[str, Any]) -> bool:
        """Stream one pod's log until it ends, skipping lines shown before a reconnect.
        False when the stream broke off (or the container was not up): look again."""
        name = pod["metadata"]["name"]
        self._tag = status.tag(pod)
        try:
            async for line in self.hook.follow_pod_log(name, self.namespace):
                stamp, _, text = line.partition(" ")
                if stamp <= self._last_stamp:
                    continue
                self._last_stamp = stamp
                report = parse_report(text)
                if self.on_line is not None:
                    self.on_line(pod, stamp, text, report)
                self._show(text, report, kubelet_time(stamp))
                if self.lines_left <= 0:
                    return True
        except Exception as err:
            if api_status(err) in (400, 404) or is_transient(err):
                return False
            raise
        self._show_held()  # the container's log ended
        return True

    def _show(self, text: str, report: dict[str, Any] | None, at: float | None) -> None:
        tag = self._tag
        if report is not None:
            line = self.progress.line(report, time.time() if at is None else at)
            if line is not None and self.reports_left > 0:
                self.reports_left -= 1
                self.log.info("%s %s", tag, line)
            return
        self.lines_left -= 1
        if self.lines_left > 0:
            self.log.info("%s %s", tag, text[:MAX_LINE])
        else:
            self.log.info(
                "%s (leader log output stops here in the task log; the pod's log has the rest)",
                tag,
            )
