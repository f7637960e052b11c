"""The emulator's kubelet: runs a pod's container and records its log and termination.

Two runners. :class:`ScriptedRunner` plays a scripted outcome (a log, an exit code, a
termination message, a duration) for fast control-plane tests. :class:`ProcessRunner` runs the
pod's real command as a local process, so a JAX job's result is real.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from airflow_provider_jax.local.pods import PodPlan

# Kubelet's FallbackToLogsOnError: the last 80 lines or 2048 bytes of the log, whichever is less.
FALLBACK_LINES, FALLBACK_BYTES = 80, 2048


def log_timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


@dataclass(frozen=True)
class Exit:
    code: int
    message: str = ""

    @property
    def reason(self) -> str:
        return "Completed" if self.code == 0 else "Error"


@dataclass(eq=False)
class PodRun:
    """One pod's life in the emulator: what it runs, what it printed, how it ended."""

    name: str
    namespace: str
    jobset: str
    attempt: int
    plan: PodPlan
    container: dict[str, Any]
    log: list[tuple[str, str]] = field(default_factory=list)
    exit: Exit | None = None
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)  # ends a scripted pod now
    task: asyncio.Task[Exit] | None = None
    _grew: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def slice_index(self) -> int:
        return self.plan.slice_index

    @property
    def host_index(self) -> int:
        return self.plan.host_index

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.plan.labels)

    async def write(self, line: str) -> None:
        self.log.append((log_timestamp(), line))
        async with self._grew:
            self._grew.notify_all()

    async def ended(self, exit: Exit) -> None:
        self.exit = exit
        async with self._grew:
            self._grew.notify_all()

    async def wait_for_log(self, seen: int) -> None:
        """Until the log has more than ``seen`` lines or the container has ended."""
        async with self._grew:
            await self._grew.wait_for(lambda: len(self.log) > seen or self.exit is not None)

    def fallback_message(self) -> str:
        text = "\n".join(line for _, line in self.log[-FALLBACK_LINES:])
        return text.encode()[-FALLBACK_BYTES:].decode(errors="ignore")


class Runner(Protocol):
    async def run(self, pod: PodRun) -> Exit: ...


@dataclass(frozen=True)
class PodScript:
    """What a scripted pod does: print ``logs`` over ``duration`` seconds (``math.inf``: until
    the test releases it, or it is killed), then end with ``exit_code`` and ``message``."""

    exit_code: int = 0
    message: str = ""
    logs: Sequence[str] = ()
    duration: float = 0.05


class ScriptedRunner:
    def __init__(self, script: Callable[[PodRun], PodScript] = lambda pod: PodScript()) -> None:
        self.script = script

    async def run(self, pod: PodRun) -> Exit:
        script = self.script(pod)
        finite = not math.isinf(script.duration)
        step = script.duration / (len(script.logs) + 1) if finite else 0.0
        for line in script.logs:
            await pod.write(line)
            if await killed_within(pod, step):
                return Exit(143)
        if await killed_within(pod, step if finite else None):
            return Exit(143)
        return Exit(script.exit_code, script.message)


async def killed_within(pod: PodRun, seconds: float | None) -> bool:
    """Wait ``seconds`` (None: until released); True if the pod was killed meanwhile."""
    waits = {asyncio.ensure_future(pod.killed.wait()), asyncio.ensure_future(pod.released.wait())}
    await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    for waiting in waits:
        waiting.cancel()
    return pod.killed.is_set()
