"""The emulator's kubelet: runs a pod's container and records its log and termination.

Two runners. :class:`ScriptedRunner` plays a scripted outcome (a log, an exit code, a
termination message, a duration) for fast control-plane tests. :class:`ProcessRunner` runs the
pod's real command as a local process, so a JAX job's result is real.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from airflow_provider_jax.backends.local.localize import free_ports, localize
from airflow_provider_jax.backends.local.pods import PodPlan, plan_pods
from airflow_provider_jax.backends.local.processes import PodProcess

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
    manifest: dict[str, Any]  # its JobSet, as submitted
    log: list[tuple[str, str]] = field(default_factory=list)
    exit: Exit | None = None
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)  # ends a scripted pod now
    task: asyncio.Task[Exit] | None = None
    running: bool = False  # its container has started
    conditions: set[str] = field(default_factory=set)  # pod condition types that are True
    _grew: asyncio.Event = field(default_factory=asyncio.Event)  # replaced once set

    @property
    def slice_index(self) -> int:
        return self.plan.slice_index

    @property
    def host_index(self) -> int:
        return self.plan.host_index

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.plan.labels)

    def write(self, line: str) -> None:
        self.log.append((log_timestamp(), line))
        self._wake()

    def ended(self, exit: Exit) -> None:
        self.exit = exit
        self._wake()

    def _wake(self) -> None:
        self._grew.set()
        self._grew = asyncio.Event()

    async def wait_for_log(self, seen: int) -> None:
        """Until the log has more than ``seen`` lines or the container has ended."""
        while len(self.log) <= seen and self.exit is None:
            await self._grew.wait()

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
            pod.write(line)
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


class ProcessRunner:
    """Run each pod's real command as a local process, through the local backend's
    :class:`~airflow_provider_jax.backends.local.processes.PodProcess`: the coordinator moves to
    127.0.0.1 and the CPU poses as the pod's chips, so a JAX job's result is real.
    ``pythonpath`` makes modules importable in the pods (what the image would contain);
    ``secrets`` are the namespace's Secrets (name to data), which a kubelet reads for
    ``secretKeyRef`` and ``envFrom``: a missing one fails the pod, as CreateContainerConfigError
    would keep it from starting."""

    def __init__(
        self,
        pythonpath: Sequence[str] = (),
        secrets: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.pythonpath = list(pythonpath)
        self.secrets = dict(secrets or {})
        self._plans: dict[tuple[str, str, int], dict[str, PodPlan]] = {}

    def _local_plan(self, pod: PodRun) -> PodPlan:
        """The pod's plan with this attempt's coordinator on free local ports."""
        key = (pod.namespace, pod.manifest["metadata"]["uid"], pod.attempt)
        if key not in self._plans:
            local = localize(pod.manifest, *free_ports(2))
            plans = plan_pods(local, restart_attempt=pod.attempt, secrets=self.secrets.__getitem__)
            self._plans[key] = {plan.name: plan for plan in plans}
        return self._plans[key][pod.plan.name]

    async def run(self, pod: PodRun) -> Exit:
        loop = asyncio.get_running_loop()

        def on_line(plan: PodPlan, stream: str, line: str) -> None:
            loop.call_soon_threadsafe(pod.write, line)

        process = PodProcess.start(self._local_plan(pod), on_line, self.pythonpath)
        try:
            while process.poll() is None:
                if await killed_within(pod, 0.05):
                    process.kill()
        finally:
            await asyncio.to_thread(process.close)
        code = process.popen.returncode
        # A container killed by signal N exits 128 + N, as Kubernetes reports it.
        return Exit(code if code >= 0 else 128 - code, process.termination_message() or "")
