"""A Kubernetes API emulator on 127.0.0.1, in a background thread, for tests and benchmarks."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from harness.k8s_emulator.api import Api, Faults, Request
from harness.k8s_emulator.controller import JOBSET, POD, Controller
from harness.k8s_emulator.kubelet import PodRun, PodScript, Runner, ScriptedRunner
from harness.k8s_emulator.kueue import Kueue
from harness.k8s_emulator.kueue_objects import ClusterQueue, LocalQueue
from harness.k8s_emulator.rbac import Role
from harness.k8s_emulator.scheduler import NodePool, Scheduler, event
from harness.k8s_emulator.store import Store

TOKEN = "emulator-token"


class Emulator:
    """The API server, JobSet controller and kubelet, served over HTTP on a free local port.

    Tests talk to it through the real clients (via :meth:`kubeconfig` or
    :meth:`connection`), steer it (``runner``, ``faults``) and inspect it (``jobsets()``,
    ``requests``, ``submitted``) from their own thread; all state lives on its event loop.
    """

    def __init__(
        self, validate: Callable[[dict[str, Any]], list[str]], role: Role | None = None
    ) -> None:
        """:param role: what the provider's identity may do (RBAC on); None for anything."""
        self.role = role
        self.runner: Runner = ScriptedRunner()
        self.store = Store()
        self.controller = Controller(self.store, lambda: self.runner)
        self.kueue = Kueue(self.store, self.controller.suspend, self.controller.resume)
        self.controller.on_gone = self.kueue.jobset_gone
        self.api = Api(self.store, self.controller, self.kueue, validate, role=role)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="k8s-emulator", daemon=True
        )
        self._runner: web.AppRunner | None = None
        self._certificate: tuple[Path, Path] | None = None
        self.url = ""

    # lifecycle -------------------------------------------------------------------------------

    def start(self, certificate: tuple[Path, Path] | None = None) -> Emulator:
        """Serve on a free port; over TLS, as real API servers do, with ``certificate``
        (PEM cert and key files; the cert, self-signed, is also the cluster's CA)."""
        self._certificate = certificate
        self._thread.start()
        self.url = self.call(self._serve())
        return self

    async def _serve(self) -> str:
        self._runner = web.AppRunner(
            self.api.app(), handle_signals=False, access_log=None, shutdown_timeout=0.1
        )
        await self._runner.setup()
        tls = None
        if self._certificate:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(*self._certificate)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        port = self._runner.addresses[0][1]
        return f"{'https' if tls else 'http'}://127.0.0.1:{port}"

    def stop(self) -> None:
        self.call(self._shutdown())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    async def _shutdown(self) -> None:
        await self.controller.shutdown()
        for task in list(self.api.streams):
            task.cancel()
        if self._runner:
            await self._runner.cleanup()

    def reset(self) -> None:
        """Forget every object and counter, stopping what runs; for the next test."""

        async def reset() -> None:
            await self.controller.shutdown()
            self.controller.pods.clear()
            self.controller.deletions.clear()
            self.controller.finished_at.clear()
            self.controller.unpullable.clear()
            self.controller.deletion_hold = 0.0
            self.controller.scheduler = None
            self.kueue.reset()
            for task in list(self.api.streams):
                task.cancel()
            self.store.clear()
            self.store.compact()

        self.call(reset())
        self.runner = ScriptedRunner()
        self.api.faults = Faults()
        self.api.requests.clear()
        self.api.submitted.clear()
        self.api.minted.clear()
        self.api.tokens = {TOKEN}
        self.api.role = self.role

    # steering ------------------------------------------------------------------------------

    @property
    def faults(self) -> Faults:
        return self.api.faults

    @faults.setter
    def faults(self, value: Faults) -> None:
        self.api.faults = value

    def script(self, script: Callable[[PodRun], PodScript]) -> None:
        """Make every pod from now on play ``script(pod)``."""
        self.runner = ScriptedRunner(script)

    def unpullable(self, image: str, why: str) -> None:
        """Make every pull of ``image`` fail with kubelet's ``why``; its pods never start."""
        self.call(lambda: self.controller.unpullable.__setitem__(image, why))

    def hold_deletions(self, seconds: float) -> None:
        """Keep each Foreground-deleted JobSet, marked as being deleted, ``seconds`` longer."""
        self.call(lambda: setattr(self.controller, "deletion_hold", seconds))

    def disrupt(self, pod_name: str, reason: str = "PreemptionByScheduler") -> None:
        """Preempt a running pod as Kubernetes does: the ``DisruptionTarget`` condition first
        (reason as the scheduler, eviction API or kubelet writes it), then its container is
        stopped (exit 143)."""

        def disrupt() -> None:
            pod = next(p for p in self.controller.pods.values() if p.name == pod_name)
            obj = self.store.get("pods", pod.namespace, pod.name)
            obj["status"].setdefault("conditions", []).append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": reason,
                    "message": f"{reason}: the pod is being terminated",
                }
            )
            self.store.update("pods", obj)
            pod.conditions.add("DisruptionTarget")
            pod.killed.set()

        self.call(disrupt)

    def nodes(self, *pools: NodePool, autoscaling: bool = False) -> None:
        """Place pods on these node pools from now on, as kube-scheduler would (until
        :meth:`reset`); with ``autoscaling``, the cluster autoscaler grows them up to their
        ``max_size`` or records why it will not. No pools: place every pod at once again."""

        def record(pod: dict[str, Any], reason: str, message: str) -> None:
            self.store.create("events", event(pod, reason, message, "cluster-autoscaler"))

        scheduler = Scheduler(list(pools), autoscaling, record) if pools else None
        self.call(lambda: setattr(self.controller, "scheduler", scheduler))

    def queues(
        self, *queues: ClusterQueue | LocalQueue, priorities: dict[str, int] | None = None
    ) -> None:
        """Install Kueue with these queues (and PriorityClass values) until :meth:`reset`:
        queue-labelled JobSets created from now on get Workloads."""
        self.call(lambda: self.kueue.configure(*queues, priorities=priorities))

    def provision(self, jobset: str, outcome: str, message: str = "") -> None:
        """The autoscaler's verdict on the JobSet's ProvisioningRequest (see ``kueue.py``)."""
        self.call(lambda: self.kueue.provision(jobset, outcome, message))

    def workload(self, jobset: str, namespace: str = "default") -> dict[str, Any] | None:
        """The Kueue Workload of ``jobset``, as stored."""

        def owner(workload: dict[str, Any]) -> str:
            return workload["metadata"]["ownerReferences"][0]["name"]

        found = self.call(lambda: self.store.list("workloads", namespace)[0])
        return next((w for w in found if owner(w) == jobset), None)

    def grant(self, role: Role | None) -> None:
        """Bind ``role`` to the provider's identity instead (until :meth:`reset`)."""
        self.api.role = role

    def release(self) -> None:
        """Let every scripted pod that waits for it (``duration=math.inf``) end now."""

        def release() -> None:
            for pod in self.controller.pods.values():
                pod.released.set()

        self.call(release)

    def compact(self) -> None:
        """Forget the watch history: clients resuming an old watch get 410 Gone."""
        self.call(self.store.compact)

    def restart(self) -> None:
        """What watchers see of an API server restart: their streams cut, and the history
        they would resume from gone while the cluster changed, so they meet 410 Gone."""

        def restart() -> None:
            name = f"restart-{self.store.rv}"
            self.store.create("events", {"metadata": {"namespace": "default", "name": name}})
            self.store.compact()
            for task in list(self.api.watches):
                task.cancel()

        self.call(restart)

    # inspection ----------------------------------------------------------------------------

    def call(self, work: Any, timeout: float = 30) -> Any:
        """Run a coroutine (or a plain callable) on the emulator's loop and return its result."""
        if not asyncio.iscoroutine(work):
            fn = work

            async def wrapped() -> Any:
                return fn()

            work = wrapped()
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def jobsets(self, namespace: str = "default") -> list[dict[str, Any]]:
        return self.call(lambda: self.store.list(JOBSET, namespace)[0])

    def jobset(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        return self.call(lambda: self.store.get(JOBSET, namespace, name))

    def pods(self, namespace: str = "default") -> list[dict[str, Any]]:
        return self.call(lambda: self.store.list(POD, namespace)[0])

    @property
    def requests(self) -> list[Request]:
        return list(self.api.requests)

    @property
    def submitted(self) -> list[dict[str, Any]]:
        return list(self.api.submitted)

    def running_pods(self, jobset: str | None = None) -> int:
        """How many pods (of ``jobset``, or of any) run now."""
        return self.call(
            lambda: sum(
                1
                for p in self.controller.pods.values()
                if p.exit is None and jobset in (None, p.jobset)
            )
        )

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
        """Poll ``predicate`` (in the caller's thread) until truthy; its value, or TimeoutError."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"emulator: timed out waiting for {what or predicate}")
            time.sleep(0.05)
        return value

    # clients -------------------------------------------------------------------------------

    def kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        """Write a kubeconfig for this cluster (JSON is valid YAML) and return its path."""
        path.write_text(json.dumps(self.kubeconfig_dict(namespace)))
        return path

    def kubeconfig_dict(self, namespace: str = "default") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": self._cluster()}],
            "users": [{"name": "emulator", "user": {"token": TOKEN}}],
            "contexts": [
                {
                    "name": "emulator",
                    "context": {"cluster": "emulator", "user": "emulator", "namespace": namespace},
                }
            ],
            "current-context": "emulator",
        }

    def _cluster(self) -> dict[str, str]:
        cluster = {"server": self.url}
        if self._certificate:
            ca = base64.b64encode(self._certificate[0].read_bytes()).decode()
            cluster["certificate-authority-data"] = ca
        return cluster

    def connection(self, kubeconfig: Path) -> str:
        """An ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` value pointing at this cluster."""
        return json.dumps(
            {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
        )
