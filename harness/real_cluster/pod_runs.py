"""One pod run by the fake kubelet, as a kubelet runs it: init containers in order (native
sidecars, ``restartPolicy: Always``, keep running, and the next container waits for a
sidecar's startup probe), then the program's container; status reported as the kubelet
writes it; and container restarts by the containers' restart rules.

- ``RestartAllContainers`` (Kubernetes 1.35+, on by default in 1.36) restarts the pod in place,
  as https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#restart-all-containers
  describes: every container is stopped (the program first, sidecars last), the pod keeps its
  UID, name, node, IP and volumes (this pod's folder), the ``AllContainersRestarting``
  condition is True meanwhile, and every container starts again in order, its
  ``restartCount`` one higher and its ``lastState`` the run that ended (the stopped ones with
  the kubelet's reason ``RestartingAllContainers`` and exit code 137).
- A sidecar that exits otherwise restarts alone (``restartPolicy: Always``).
- Every pod here shares this machine's network, where on GKE each has its own: an HTTP
  startup probe is pointed at a free port of its own, given to JobSet's agent as
  ``STARTUP_PROBE_PORT`` (as the JobSet's coordinator ports are given to the program).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_jax.backends.local.localize import free_ports
from airflow_provider_jax.backends.local.pods import expand
from airflow_provider_jax.manifest.jobset_api import RESTARTING_ALL_CONTAINERS
from airflow_provider_jax.runtime.env import TERMINATION_PATH_ENV
from harness.real_cluster import containers
from harness.real_cluster.containers import Instance, is_sidecar, now, restart_action

DEVICE_FLAG = "--xla_force_host_platform_device_count"
ACCELERATORS = ("google.com/tpu", "nvidia.com/gpu")
MESSAGE_LIMIT, FALLBACK_LINES, FALLBACK_BYTES = 4096, 80, 2048
PROBE_PORT_ENV = "STARTUP_PROBE_PORT"  # JobSet's agent: where its barrier answers
# What a container without a command runs: the entrypoint of its image, by repository name.
Entrypoints = dict[str, str]


@dataclass
class Setup:
    """What the kubelet prepares once per start of the pod's containers: the files their
    namespaces mount, and how to build a container's env, as it starts (its downward-API
    values read then: JobSet's agent annotates the pod before the program starts)."""

    env: Callable[[dict[str, Any]], Awaitable[dict[str, str]]]
    mounts: Callable[[dict[str, Any]], Awaitable[str]]  # a shell script (containers.py)
    hosts: Path
    hostname: str


@dataclass(eq=False)
class PodRun:
    """A pod on this kubelet: its current container instances and their restart counts."""

    pod: dict[str, Any]
    folder: Path
    entrypoints: Entrypoints
    report: Callable[[dict[str, Any]], Awaitable[None]]  # patches the pod's status
    current: dict[str, Instance] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    last: dict[str, dict[str, Any]] = field(default_factory=dict)  # lastState.terminated
    exited: asyncio.Event = field(default_factory=asyncio.Event)  # the pod has ended
    deleting: bool = False
    started_at: str | None = None
    probe_ports: dict[str, int] = field(default_factory=dict)  # by container name
    probe_epochs: dict[str, float] = field(default_factory=dict)  # its prober's first tick

    @property
    def spec(self) -> dict[str, Any]:
        return self.pod["spec"]

    @property
    def program(self) -> dict[str, Any]:
        return self.spec["containers"][0]

    def instance(self, container: str | None = None) -> Instance | None:
        return self.current.get(container or self.program["name"])

    # -- the pod's life ------------------------------------------------------------------------

    async def run(self, prepare: Callable[[], Awaitable[Setup]]) -> None:
        """Start every container, in order, and again after each in-place restart, until the
        program ends for good or the pod is deleted."""
        try:
            while not self.deleting:
                setup = await prepare()
                if not await self._start_all(setup):
                    return
                if not await self._supervise(setup):
                    return
        finally:
            self.exited.set()

    async def _start_all(self, setup: Setup) -> bool:
        for init in self.spec.get("initContainers") or ():
            if self.deleting:
                return False
            instance = await self._start(init, setup)
            if instance is None:
                return False
            if not is_sidecar(init):
                if (code := await instance.wait()) != 0:
                    await self._end(init, code, "Error")
                    return False
            elif init.get("startupProbe") and not await self._probe(init, instance):
                if self.deleting:
                    return False
                await self._restart_all(init)  # its rules: a failed probe kills it (137)
                return True
        return await self._start(self.program, setup) is not None

    async def _supervise(self, setup: Setup) -> bool:
        """Wait for an exit; True when the pod restarts in place (start again)."""
        while True:
            waits = {asyncio.create_task(i.wait()): n for n, i in self.current.items() if i.running}
            if not waits:
                return False
            done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            if self.deleting:
                return False
            name = waits[next(iter(done))]
            instance = self.current[name]
            code = instance.code if instance.code is not None else 1
            container = self._container(name)
            action = restart_action(container, code)
            if action == "RestartAllContainers":
                await self._restart_all(container)
                return True
            if is_sidecar(container) or action == "Restart":
                self._note_ended(name, instance, reason="Error" if code else "Completed")
                await self._start(container, setup)
                continue
            await self._end(container, code)
            return False

    async def _start(self, container: dict[str, Any], setup: Setup) -> Instance | None:
        name = container["name"]
        env = await setup.env(container)
        argv = [expand(a, env) for a in [*container.get("command", []), *container.get("args", [])]]
        if not container.get("command"):
            image = container.get("image", "").rsplit("/", 1)[-1].split(":")[0].split("@")[0]
            if image in self.entrypoints:
                argv = [self.entrypoints[image], *argv]
        count = self.restarts.setdefault(name, 0)
        instance = Instance(name, container, self.folder / f"{name}-{count}.log")
        if argv and not containers.on_path(argv[0], env):
            # As containerd fails a container whose command is missing: never started, and
            # kubelet reports StartError with exit code 128 and the runtime's message.
            message = (
                "failed to create containerd task: failed to create shim task: OCI runtime "
                "create failed: runc create failed: unable to start container process: error "
                f'during container init: exec: "{argv[0]}": executable file not found in $PATH'
            )
            await self._end(container, 128, "StartError", message)
            return None
        if name == self.program["name"]:  # each run of it writes its own message
            (self.folder / "termination-log").unlink(missing_ok=True)
        if (probe := self._http_probe(container)) is not None:
            env[PROBE_PORT_ENV] = str(probe["port"])
        try:
            mounts = await setup.mounts(container)
        except ValueError as err:
            await self._end(container, 128, "CreateContainerError", str(err))
            return None
        await containers.start(
            instance, argv, env, self.folder, setup.hosts, setup.hostname, mounts
        )
        self.current[name] = instance
        if self.deleting:  # deleted while it started: delete() found no process to stop
            await self.stop(instance, self._grace())
        await self.report(self.status("Running"))
        return instance

    async def _probe(self, container: dict[str, Any], instance: Instance) -> bool:
        """The startup probe: True once it answers, False when it fails for good (or the
        container exits or the pod is deleted first). As the kubelet's prober, it ticks every
        ``periodSeconds`` from when the pod's first container started, not from each restart
        of the container: after an in-place restart the first probe comes at the pod's next
        tick, anywhere in the period."""
        probe = self._http_probe(container)
        settings = container["startupProbe"]
        period = float(settings.get("periodSeconds", 10))
        loop = asyncio.get_running_loop()
        epoch = self.probe_epochs.setdefault(container["name"], loop.time())
        tick = epoch + math.ceil((loop.time() - epoch) / period) * period
        for _ in range(int(settings.get("failureThreshold", 3))):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(instance.exited.wait(), max(tick - loop.time(), 0.0))
            if self.deleting or not instance.running:
                return False
            if probe is not None and await asyncio.to_thread(_answers, probe):
                return True
            tick += period
        await self.stop(instance, grace=0)
        return False

    # -- restarts and the end ------------------------------------------------------------------

    async def _restart_all(self, source: dict[str, Any]) -> None:
        """Restart every container in place: the others are stopped, program first."""
        source_instance = self.current[source["name"]]
        self._note_ended(source["name"], source_instance, reason="Error")
        others = [i for n, i in reversed(self.current.items()) if n != source["name"]]
        await self.report(self.status("Running", restarting=True))
        for instance in others:
            if instance.running:
                await self.stop(instance, self._grace())
            self._note_ended(instance.name, instance, reason=RESTARTING_ALL_CONTAINERS, code=137)
        self.current.clear()

    def _note_ended(
        self, name: str, instance: Instance, reason: str, code: int | None = None
    ) -> None:
        """``lastState`` of a container that restarts: the run that ended, with its
        termination message (the kubelet's ``RestartingAllContainers`` has its own words)."""
        exit_code = code if code is not None else (instance.code or 0)
        message = ""
        if reason != RESTARTING_ALL_CONTAINERS:
            message = self._termination_message(self._container(name), instance, exit_code)
        self.last[name] = {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": instance.started or now(),
            "finishedAt": instance.finished or now(),
            **({"message": message} if message else {}),
        }
        self.restarts[name] = self.restarts.get(name, 0) + 1

    async def _end(
        self, container: dict[str, Any], code: int, reason: str | None = None, message: str = ""
    ) -> None:
        """The program (or an init container) ended for good: stop the rest, report it."""
        for instance in reversed(list(self.current.values())):
            if instance.running:
                await self.stop(instance, self._grace())
        if reason is None:
            reason = "Completed" if code == 0 else "Error"
        instance = self.current.get(container["name"])
        if not message:
            message = self._termination_message(container, instance, code)
        terminated = {"exitCode": code, "reason": reason,
                      "startedAt": (instance.started if instance else None) or now(),
                      "finishedAt": now(), **({"message": message} if message else {})}  # fmt: skip
        await self.report(self.status("Succeeded" if code == 0 else "Failed", terminated))

    def _termination_message(
        self, container: dict[str, Any], instance: Instance | None, code: int
    ) -> str:
        termination = self.folder / "termination-log"
        message = termination.read_text()[:MESSAGE_LIMIT] if termination.exists() else ""
        fallback = container.get("terminationMessagePolicy") == "FallbackToLogsOnError"
        if message or code == 0 or not fallback or instance is None:
            return message
        if not instance.log_file.exists():
            return ""
        lines = instance.log_file.read_text().splitlines()[-FALLBACK_LINES:]
        return "\n".join(line.split(" ", 1)[-1] for line in lines)[-FALLBACK_BYTES:]

    async def stop(self, instance: Instance, grace: float) -> None:
        """SIGTERM the container's processes, SIGKILL after ``grace`` seconds."""
        if instance.process is None or not instance.running:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(instance.process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(instance.exited.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(instance.process.pid, signal.SIGKILL)
            await instance.exited.wait()

    async def delete(self, grace: float) -> None:
        """The pod is being deleted: stop the program, then its sidecars."""
        self.deleting = True
        for instance in reversed(list(self.current.values())):
            await self.stop(instance, grace)
        await self.exited.wait()

    def _grace(self) -> float:
        return float(self.spec.get("terminationGracePeriodSeconds", 30))

    def _container(self, name: str) -> dict[str, Any]:
        every = [*(self.spec.get("initContainers") or ()), *self.spec["containers"]]
        return next(c for c in every if c["name"] == name)

    # -- status --------------------------------------------------------------------------------

    def status(
        self, phase: str, terminated: dict[str, Any] | None = None, restarting: bool = False
    ) -> dict[str, Any]:
        """The pod's status now, as the kubelet writes it."""
        up = phase == "Running" and not restarting and self.program["name"] in self.current
        stamp = now()
        conditions = [{"type": t, "status": "True" if (up or t in ("PodScheduled", "Initialized"))
                       else "False", "lastTransitionTime": stamp}
                      for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]  # fmt: skip
        if any(c.get("restartPolicyRules") for c in self._every()):
            conditions.append({"type": "AllContainersRestarting", "status": str(restarting),
                               "lastTransitionTime": stamp,
                               **({"reason": "RestartAllContainersStarted"} if restarting else {})})  # fmt: skip
        status: dict[str, Any] = {"phase": phase, "conditions": conditions}
        if phase == "Running":
            status.update({"podIP": "127.0.0.1", "hostIP": "127.0.0.1",
                           "podIPs": [{"ip": "127.0.0.1"}], "startTime": self._start_time()})  # fmt: skip
        inits = self.spec.get("initContainers") or ()
        status["containerStatuses"] = [self._container_status(self.program, terminated)]
        if inits:
            status["initContainerStatuses"] = [self._container_status(c, None) for c in inits]
        return status

    def _start_time(self) -> str:
        self.started_at = self.started_at or now()
        return self.started_at

    def _http_probe(self, container: dict[str, Any]) -> dict[str, Any] | None:
        """The container's startup probe over HTTP, at a port of its own on this machine."""
        get = (container.get("startupProbe") or {}).get("httpGet")
        if get is None:
            return None
        if container["name"] not in self.probe_ports:
            self.probe_ports[container["name"]] = free_ports(1)[0]
        return {"path": get.get("path", "/"), "port": self.probe_ports[container["name"]]}

    def _every(self) -> list[dict[str, Any]]:
        return [*(self.spec.get("initContainers") or ()), *self.spec["containers"]]

    def _container_status(
        self, container: dict[str, Any], terminated: dict[str, Any] | None
    ) -> dict[str, Any]:
        name = container["name"]
        instance = self.current.get(name)
        if terminated is not None:
            state: dict[str, Any] = {"terminated": terminated}
        elif instance is not None and instance.running:
            state = {"running": {"startedAt": instance.started}}
        else:
            state = {"waiting": {"reason": RESTARTING_ALL_CONTAINERS if name in self.last
                                 else "PodInitializing"}}  # fmt: skip
        running = "running" in state
        status = {"name": name, "image": container.get("image", ""), "imageID": "",
                  "ready": running, "started": running, "restartCount": self.restarts.get(name, 0),
                  "state": state}  # fmt: skip
        if name in self.last:
            status["lastState"] = {"terminated": self.last[name]}
        return status


def base_env(
    pod: dict[str, Any], container: dict[str, Any], folder: Path, pythonpath: list[str]
) -> dict[str, str]:
    """What every container process gets besides its own env: JAX on the CPU standing in for
    the pod's chips, and the pod's folder as its home and scratch."""
    limits = container.get("resources", {}).get("limits", {})
    chips = sum(int(limits.get(r, 0)) for r in ACCELERATORS) or 1
    python_dir = os.path.dirname(sys.executable)
    return {
        "PATH": os.pathsep.join([python_dir, os.environ.get("PATH", os.defpath)]),
        "HOME": str(folder), "LANG": "C.UTF-8",
        "JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"{DEVICE_FLAG}={chips}",
        TERMINATION_PATH_ENV: str(folder / "termination-log"), "TMPDIR": str(folder),
        "PYTHONPATH": os.pathsep.join(pythonpath), "PYTHONUNBUFFERED": "1",
    }  # fmt: skip


def _answers(probe: dict[str, Any]) -> bool:
    url = f"http://127.0.0.1:{probe['port']}{probe['path']}"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return 200 <= response.status < 400
    except OSError:
        return False
