"""Follow a JobSet's pod logs into the task log while it runs: process 0's only
(``stream_logs="leader"``) or every host's (``"all"``), each line ``[slice/host]``-prefixed.
The leader's progress reports become paced lines with a rate and ETA (``progress.py``); the
other hosts' reports repeat the leader's and are dropped. Lines are bounded per host, in
number and in length.

Per restart attempt it costs one pod list, shared by all hosts (for the leader, a list of its
own pod only), plus one long-lived log stream per followed pod: 2 requests for ``"leader"``,
1 + hosts for ``"all"``. A triggerer holds at most ``[jax] max_log_streams`` streams at once
(``stream_slots``); a log waits its turn, and a job that ends first shows its last lines. It
never decides the task's outcome: any error here only ends the streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_jax.hooks.api_errors import api_status, explain, is_transient
from airflow_provider_jax.hooks.jobset import AsyncJobSetOperations
from airflow_provider_jax.manifest import status
from airflow_provider_jax.reporting.deadlines import DeadlineWatch
from airflow_provider_jax.reporting.host_logs import HostLines
from airflow_provider_jax.reporting.log_budget import LineBudget
from airflow_provider_jax.reporting.progress import Progress, kubelet_time
from airflow_provider_jax.runtime.messages import host_tag, parse_report
from airflow_provider_jax.triggers.watch.stream_slots import stream_slots

RETRY_DELAYS = (2, 5, 10, 30, 60)  # waits while a container is not up yet
STREAM_RECHECK = 10  # seconds after a log stream ends before looking whether it only dropped
BROKEN_RECHECK = 1  # seconds after a stream broke off (or was refused) before trying again
UP = ("Running", "Succeeded", "Failed")  # phases whose container log can be read
LEADER_TAG = host_tag(0, 0)  # process 0, whose reports are the progress lines
LineHook = Callable[[int, str, str, dict[str, Any] | None], None]


@dataclass
class _Stream:
    """One pod's log stream: where it got to, and whether it ran to its end."""

    pod: str
    tag: str
    leader: bool
    attempt: int  # the JobSet restart attempt that made the pod
    phase: str | None = None  # at the last look
    last_stamp: str = ""
    ended: bool = False
    recheck: bool = False  # ended a while ago, and its pod still showed Running then
    spent: bool = False  # its host's budget of lines is used up
    task: asyncio.Task[None] | None = None
    shown: HostLines = field(default_factory=HostLines)  # what of its lines the log shows

    @property
    def active(self) -> bool:
        return self.task is not None and not self.task.done()

    @property
    def settled(self) -> bool:
        """Nothing to do until it changes: streaming, or shown to its end. A stream that
        ended is taken as its container's exit until the recheck, which finds one that only
        dropped (its pod still Running), so the JobSet changes that follow an exit cost no
        listing."""
        if self.active or self.spent:
            return True
        return self.ended and (self.phase != "Running" or not self.recheck)


class PodLogs:
    """Streams one JobSet's pod logs into ``log`` while the trigger waits.

    :param every_host: every pod of the newest attempt, not only the leader (process 0).
    :param max_lines: the most log lines per host, and the most progress lines, per try.
    :param on_line: called with (the pod's restart attempt, kubelet's timestamp, text, its
        report) of each new line of the leader.
    :param deadlines: the deadlines the leader's ETA is held against; their callbacks run in
        threads, never on the triggerer's event loop.
    """

    def __init__(
        self,
        hook: AsyncJobSetOperations,
        name: str,
        namespace: str,
        *,
        every_host: bool,
        max_lines: int,
        log: logging.Logger | Any,
        on_line: LineHook | None = None,
        deadlines: DeadlineWatch | None = None,
    ) -> None:
        self.hook, self.name, self.namespace = hook, name, namespace
        self.every_host = every_host
        self.reports_left = max_lines
        self.log = log
        self.on_line = on_line
        self.progress = Progress()
        self.deadlines = deadlines or DeadlineWatch(())
        self._callbacks: set[asyncio.Future[None]] = set()  # deadline callbacks running
        self._budget = LineBudget(max_lines)  # per [slice/host], across restarts
        self._streams: dict[str, _Stream] = {}  # by pod name
        self._starting = False  # a wanted pod was not up at the last look
        self._wanted_now: list[str] = []  # the pods wanted at the last look
        self._attempt = 0  # the JobSet's restart count, as last heard
        self._has_run = False  # ... and whether some Job had all its pods running
        self._listed_attempt: int | None = None  # ... when the pods were last listed
        self._refused = False  # the API refused a log stream (RBAC): stop streaming
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._slots = stream_slots()
        self._slots_noted = False  # said that this job's log waits for a slot
        self._task: asyncio.Task[None] | None = None

    def update(self, jobset: Mapping[str, Any]) -> None:
        """Hear of a JobSet change: pods may have started, or a restart made new ones."""
        self._attempt = status.restarts(jobset)
        self._has_run = status.has_run(jobset)
        if status.has_started(jobset):
            self._changed.set()
            if self._task is None:
                self._task = asyncio.create_task(self._run(), name=f"pod-logs-{self.name}")

    async def stop(self, grace: float = 0) -> None:
        """Stop streaming; with ``grace``, first let it show what is left of the finished
        pods' logs, for at most that many seconds."""
        if self._task is None:
            return
        self._closing.set()
        self._changed.set()
        if grace > 0:
            await asyncio.wait({self._task}, timeout=grace)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._cancel_streams()
        self._show_held()

    async def _cancel_streams(self) -> None:
        tasks = [s.task for s in self._streams.values() if s.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _show_held(self) -> None:
        """The newest report the pacing held back: the log ends on where the run got to."""
        if (held := self.progress.flush()) is not None and self.reports_left > 0:
            self.reports_left -= 1
            self.log.info("%s %s", LEADER_TAG, held)

    def _wake(self, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self._changed.set)

    async def _run(self) -> None:
        waits = iter(RETRY_DELAYS)
        first_look = True
        try:
            while not self._refused:
                if self._closing.is_set() and self._followed_all():
                    # No listing needed: what is left comes on the open streams, if any.
                    streaming = [s.task for s in self._streams.values() if s.task and s.active]
                    await asyncio.gather(*streaming)
                    return
                self._changed.clear()  # before listing: a change during it wakes us again
                if self._settled() and not self._closing.is_set():
                    # Every wanted log is streaming: only a stream's end (or a restart,
                    # which ends the streams) is news, so JobSet changes cost no listing.
                    await self._changed.wait()
                    continue
                if first_look and not self._has_run and not self._closing.is_set():
                    # Its pods exist but likely still pull images: a look now would find
                    # them Pending. Look at the next JobSet change, or soon.
                    first_look = False
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(next(waits)):
                            await self._changed.wait()
                    continue
                first_look = False
                await self._look()
                if self._closing.is_set():
                    # What is left of the finished logs; stop()'s grace bounds the wait.
                    await asyncio.gather(*(s.task for s in self._streams.values() if s.task))
                    return
                delay = None
                if self._starting or not self._wanted_now:
                    delay = next(waits, None)
                else:
                    waits = iter(RETRY_DELAYS)
                # Not all up yet: re-check now and then, as a container can take a while.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._changed.wait()
            await self._cancel_streams()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.log.warning("Stopped streaming the pods' logs: %s", explain(err))
            await self._cancel_streams()

    async def _look(self) -> None:
        """List the pods and follow the wanted ones. Its own frame: the pods listed (whole
        objects, kilobytes each) are not kept while the loop waits for the next change."""
        attempt = self._attempt
        pods = await self._list_pods()
        self._listed_attempt = attempt
        wanted = self._wanted(pods)
        self._wanted_now = [p["metadata"]["name"] for p in wanted]
        for pod in wanted:
            self._follow_if_needed(pod)
        self._starting = any(_phase(p) not in UP for p in wanted)

    async def _list_pods(self) -> list[dict[str, Any]]:
        """The pods to pick from: for the leader only its own (one per attempt, where a
        slice's list would be hundreds of kilobytes), unless the cluster does not label the
        completion index (before Kubernetes 1.28) or the pods are not there yet."""
        if not self.every_host:
            pods = await self.hook.list_jobset_pods(self.name, self.namespace, leader_only=True)
            if pods:
                return pods
        return await self.hook.list_jobset_pods(self.name, self.namespace)

    def _looked_at(self) -> list[_Stream | None] | None:
        """The streams of the pods wanted at the last look, or None when that look is out of
        date: not all were up then, or a restart has made new pods since."""
        if self._starting or self._listed_attempt != self._attempt:
            return None
        return [self._streams.get(name) for name in self._wanted_now]

    def _followed_all(self) -> bool:
        """Whether every wanted pod is streamed or shown to its end: closing needs no look."""
        streams = self._looked_at()
        if streams is None:
            return False
        return all(s and (s.active or s.ended or s.spent) for s in streams)

    def _settled(self) -> bool:
        streams = self._looked_at()
        if not streams:
            return False
        return all(s and s.settled for s in streams)

    def _wanted(self, pods: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        if self.every_host:
            return status.latest_attempt(pods)
        leader = status.leader_pod(pods)
        return [leader] if leader is not None else []

    def _follow_if_needed(self, pod: Mapping[str, Any]) -> None:
        name, phase = pod["metadata"]["name"], _phase(pod)
        if phase not in UP:
            return
        stream = self._streams.get(name)
        if stream is None:
            tag = status.tag(pod)
            attempt = status.restart_attempt(pod)
            stream = self._streams[name] = _Stream(name, tag, tag == LEADER_TAG, attempt)
        stream.phase = phase
        if self._budget.spent(stream.tag):
            stream.spent = stream.spent or not (stream.leader and self.reports_left > 0)
        if stream.active or stream.spent:
            return
        if stream.ended:
            if phase != "Running":
                return  # all shown; a restart brings new pods
            stream.ended = False  # still running: the stream had dropped
        stream.task = asyncio.create_task(self._follow(stream), name=f"log-{name}")

    async def _follow(self, stream: _Stream) -> None:
        """Stream one pod's log until it ends, skipping lines shown before a reconnect, once
        a stream slot is free; if the job ends first, show its last lines instead."""
        if self._slots.held >= self._slots.limit and not self._slots_noted:
            self._slots_noted = True
            self.log.info(
                "%d pod log streams are open in this triggerer ([jax] max_log_streams); %s's "
                "log follows once one ends, or shows its last lines when it ends",
                self._slots.limit,
                stream.pod,
            )
        held = await self._slots.take(self._closing)
        opening = held  # holds the triggerer's turn to open a stream

        def opened() -> None:
            nonlocal opening
            if opening:
                opening = False
                self._slots.opened()

        try:
            lines = (
                self.hook.follow_pod_log(stream.pod, self.namespace, on_open=opened)
                if held
                else self._tail(stream.pod)
            )
            async for line in lines:
                stamp, _, text = line.partition(" ")
                if kubelet_time(stamp) is None:
                    # Not the container's: the kubelet's own error, written into the stream
                    # once its header is sent (the container was removed: a pod restarting in
                    # place). The log ended; the next look follows the new container.
                    break
                if stamp <= stream.last_stamp:
                    continue
                stream.last_stamp = stamp
                if not self._show(stream, stamp, text):
                    stream.spent = True
                    break
        except Exception as err:
            if api_status(err) in (400, 404) or is_transient(err):
                self._wake(BROKEN_RECHECK)  # not up yet, or it broke off: look again
                return
            self.log.warning("Stopped streaming the pods' logs: %s", explain(err))
            self._refused = True
            self._changed.set()
        else:
            if stream.leader:
                self._show_held()  # the container's log ended
        finally:
            if held:
                opened()  # if it never opened
                self._slots.give()
        stream.ended, stream.recheck = True, False
        # Usually the container exited, which the JobSet's status soon shows.
        asyncio.get_running_loop().call_later(STREAM_RECHECK, self._recheck, stream)

    async def _tail(self, pod: str) -> AsyncIterator[str]:
        """The last lines of a pod's log, read once: its job ended before a slot was free
        (all that fit the line budget, none of them its notice)."""
        lines = await self.hook.read_pod_log_tail(
            pod, self.namespace, max(self._budget.max_lines - 1, 1)
        )
        self.log.info("The last %d lines of %s's log:", len(lines), pod)
        for line in lines:
            yield line

    def _recheck(self, stream: _Stream) -> None:
        stream.recheck = True
        self._changed.set()

    def _show(self, stream: _Stream, stamp: str, text: str) -> bool:
        """Log one line; False once nothing more of this pod would be shown."""
        report = parse_report(text)
        if report is not None:
            if stream.leader:
                if self.on_line is not None:
                    self.on_line(stream.attempt, stamp, text, report)
                at = kubelet_time(stamp)
                line = self.progress.line(report, time.time() if at is None else at)
                if line is not None and self.reports_left > 0:
                    self.reports_left -= 1
                    self.log.info("%s %s", stream.tag, line)
                for call in self.deadlines.check(self.progress, self.log, time.time()):
                    running = asyncio.ensure_future(asyncio.to_thread(call))
                    self._callbacks.add(running)  # held until done: a task is weakly referenced
                    running.add_done_callback(self._callbacks.discard)
            return True  # every host reports the same; the leader speaks for them
        if stream.leader and self.on_line is not None:
            self.on_line(stream.attempt, stamp, text, None)
        kept = stream.shown.keep(text)
        if kept is not None and (shown := self._budget.take(stream.tag, kept)) is not None:
            self.log.info("%s %s", stream.tag, shown)
        # The leader's stream goes on for its progress reports.
        return not self._budget.spent(stream.tag) or (stream.leader and self.reports_left > 0)


def _phase(pod: Mapping[str, Any]) -> str | None:
    return (pod.get("status") or {}).get("phase")
