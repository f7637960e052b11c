"""A fake kubelet for the real control plane: it registers Nodes with TPU and GPU capacity and
GKE's labels, binds pending pods to them (there is no kube-scheduler), runs each pod's
container as a local process, and reports what a kubelet reports.

- Each container's ``command``/``args`` run with Kubernetes' ``$(VAR)`` expansion and the env a
  kubelet builds (values, ``fieldRef``s, Secrets), with JAX on the CPU standing in for the
  pod's chips, as the local backend runs them.
- Each process gets a private mount namespace whose ``/etc/hosts`` maps its JobSet's pod DNS
  names (``<jobset>-<rjob>-<job>-<pod>.<jobset>``) to 127.0.0.1, so JAX's coordinator
  address resolves as on a cluster. The machine's own ``/etc/hosts`` is never touched.
- Status goes back as the kubelet writes it: Running, then Succeeded or Failed with the exit
  code and the termination message (``FallbackToLogsOnError``: the log's tail). A command
  that is not on the PATH never starts: Failed at once, ``StartError`` with exit code 128 and
  the runtime's message, as kubelet reports containerd's failure to start the container.
- ``pods/log`` is served over HTTPS on the Nodes' kubelet port, for the API server to proxy.
- A pod being deleted gets SIGTERM, SIGKILL after its grace period, then its final delete.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import logging
import os
import shutil
import signal
import ssl
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from kubernetes_asyncio import client, config, watch

from airflow_provider_jax.backends.local.localize import free_ports, local_coordinates
from airflow_provider_jax.backends.local.pods import expand
from airflow_provider_jax.runtime.env import COORDINATOR_PORT_ENV, TERMINATION_PATH_ENV
from harness import reaper
from harness.real_cluster.nodes import NODES, affinity_allows, fits, selector_matches
from harness.real_cluster.pod_env import container_env, hosts_file

log = logging.getLogger("fake-kubelet")
DEVICE_FLAG = "--xla_force_host_platform_device_count"
ACCELERATORS = ("google.com/tpu", "nvidia.com/gpu")
MESSAGE_LIMIT, FALLBACK_LINES, FALLBACK_BYTES = 4096, 80, 2048


def now() -> str:
    return (
        datetime.datetime.now(datetime.UTC)
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
    )


@dataclass(eq=False)
class Running:
    pod: dict[str, Any]
    folder: Path
    process: asyncio.subprocess.Process | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    deleting: bool = False

    @property
    def log_file(self) -> Path:
        return self.folder / "container.log"


class Kubelet:
    def __init__(self, work_dir: Path, pythonpath: list[str]) -> None:
        self.work_dir, self.pythonpath = work_dir, pythonpath
        self.running: dict[tuple[str, str], Running] = {}  # (namespace, pod name)
        self.bound: dict[str, str] = {}  # pod uid -> node
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> the pod as last seen
        self.tasks: set[asyncio.Task[Any]] = set()
        # (namespace, JobSet) -> its coordinator and MegaScale ports: every Node here shares
        # this machine's network, where on GKE each host has an address of its own, so two
        # slices at the same default port would join each other's coordination service.
        self.ports: dict[tuple[str, str], list[int]] = {}

    async def run(self, kubeconfig: str, port: int, cert_dir: Path) -> None:
        await config.load_kube_config(kubeconfig)
        self.api = client.ApiClient()
        self.core = client.CoreV1Api(self.api)
        await self._register(port)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self.logs)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
        await self._watch_pods()

    async def _register(self, port: int) -> None:
        for node in NODES:
            body = {"metadata": {"name": node.name, "labels": dict(node.labels)}}
            with contextlib.suppress(client.ApiException):
                await self.core.create_node(body)
            capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", **node.capacity}
            status = {
                "capacity": capacity,
                "allocatable": capacity,
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                              {"type": "Hostname", "address": node.name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "fake kubelet is posting ready status",
                                "lastHeartbeatTime": now(), "lastTransitionTime": now()}],
                "nodeInfo": {"kubeletVersion": "fake", "containerRuntimeVersion": "processes://",
                             "operatingSystem": "linux", "architecture": "amd64"},
            }  # fmt: skip
            await self.core.patch_node_status(node.name, {"status": status})

    # -- the pod loop --------------------------------------------------------------------------

    async def _watch_pods(self) -> None:
        version = None
        while True:
            try:
                if version is None:
                    listed = await self.core.list_pod_for_all_namespaces(_preload_content=False)
                    body = await listed.json()
                    version = body["metadata"]["resourceVersion"]
                    for pod in body["items"]:
                        await self.changed("ADDED", pod)
                async with watch.Watch().stream(
                    self.core.list_pod_for_all_namespaces,
                    resource_version=version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=300,
                    _preload_content=False,
                ) as stream:
                    async for event in stream:
                        obj = event["raw_object"]
                        if event["type"] == "ERROR":
                            version = None  # 410 Gone: list again
                            break
                        version = obj["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            await self.changed(event["type"], obj)
            except (TimeoutError, client.ApiException, aiohttp.ClientError, OSError) as err:
                log.warning("pod watch ended (%s); listing again", err)
                version = None
                await asyncio.sleep(0.5)

    async def changed(self, kind: str, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        key, uid = (meta["namespace"], meta["name"]), meta["uid"]
        if kind == "DELETED":
            self.pods.pop(uid, None)
            self.bound.pop(uid, None)
            return
        self.pods[uid] = pod
        node = spec.get("nodeName")
        ours = node in {n.name for n in NODES}
        if meta.get("deletionTimestamp"):
            if ours:
                self._spawn(self.delete(pod))
            return
        if not node and not spec.get("schedulingGates"):
            await self.bind(pod)
        elif ours and key not in self.running and pod["status"].get("phase") in (None, "Pending"):
            self.running[key] = Running(pod, self.work_dir / meta["namespace"] / meta["name"])
            self._spawn(self.start(self.running[key]))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def bind(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if meta["uid"] in self.bound:
            return
        used: dict[str, list[dict[str, Any]]] = {}
        for uid, node in self.bound.items():
            if (other := self.pods.get(uid)) and other["status"].get("phase") not in (
                "Succeeded", "Failed"
            ):  # fmt: skip
                used.setdefault(node, []).append(other)
        candidates = [
            n
            for n in NODES
            if selector_matches(n, pod)
            and fits(n, pod, used.get(n.name, []))
            and affinity_allows(n, pod, used)
        ]
        if not candidates:
            matching = sum(selector_matches(n, pod) for n in NODES)
            message = (
                f"0/{len(NODES)} nodes are available: "
                f"{len(NODES) - matching} node(s) didn't match Pod's node affinity/selector"
                + (f", {matching} Insufficient accelerator capacity" if matching else "")
                + "."
            )
            condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                         "message": message, "lastTransitionTime": now()}  # fmt: skip
            with contextlib.suppress(client.ApiException):
                await self.core.patch_namespaced_pod_status(
                    meta["name"], meta["namespace"], {"status": {"conditions": [condition]}}
                )
            return
        node = candidates[0]
        self.bound[meta["uid"]] = node.name
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node.name}}  # fmt: skip
        try:
            await self.core.create_namespaced_pod_binding(
                meta["name"], meta["namespace"], binding, _preload_content=False
            )
        except client.ApiException as err:
            self.bound.pop(meta["uid"], None)
            log.warning("binding %s failed: %s", meta["name"], err.reason)

    def _ports_of(self, meta: dict[str, Any]) -> list[int]:
        jobset = meta.get("labels", {}).get("jobset.sigs.k8s.io/jobset-name", meta["name"])
        key = (meta["namespace"], jobset)
        if key not in self.ports:
            self.ports[key] = free_ports(2)
        return self.ports[key]

    # -- running a pod -------------------------------------------------------------------------

    async def start(self, run: Running) -> None:
        pod, folder = run.pod, run.folder
        meta = pod["metadata"]
        folder.mkdir(parents=True, exist_ok=True)
        container = pod["spec"]["containers"][0]
        try:
            env = await container_env(self.core, pod, container)
            if COORDINATOR_PORT_ENV in env:
                env.update(local_coordinates(*self._ports_of(meta)))
        except (client.ApiException, KeyError, ValueError) as err:
            await self._report(run, None, f"CreateContainerConfigError: {err}")
            return
        argv = [expand(a, env) for a in [*container.get("command", []), *container.get("args", [])]]
        limits = container.get("resources", {}).get("limits", {})
        chips = sum(int(limits.get(r, 0)) for r in ACCELERATORS) or 1
        termination = folder / "termination-log"
        python_dir = os.path.dirname(sys.executable)
        process_env = {
            "PATH": os.pathsep.join([python_dir, os.environ.get("PATH", os.defpath)]),
            "HOME": str(folder), "LANG": "C.UTF-8", **env,
            "JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"{DEVICE_FLAG}={chips}",
            TERMINATION_PATH_ENV: str(termination), "TMPDIR": str(folder),
            "PYTHONPATH": os.pathsep.join(self.pythonpath), "PYTHONUNBUFFERED": "1",
        }  # fmt: skip
        if argv and shutil.which(argv[0], path=process_env["PATH"]) is None:
            # As containerd fails a container whose command is missing: never started, and
            # kubelet reports StartError with exit code 128 and the runtime's message.
            message = (
                "failed to create containerd task: failed to create shim task: OCI runtime "
                "create failed: runc create failed: unable to start container process: error "
                f'during container init: exec: "{argv[0]}": executable file not found in $PATH'
            )
            await self._report(run, 128, message, reason="StartError")
            return
        hosts = hosts_file(pod, self.pods.values(), folder)
        # Its own mount and UTS namespaces, as a pod has: /etc/hosts and the hostname are its.
        hostname = pod["spec"].get("hostname") or meta["name"]
        wrapper = ["unshare", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c",
                   'mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"',
                   str(hosts), hostname, *argv]  # fmt: skip
        run.process = await asyncio.create_subprocess_exec(
            *wrapper, env=process_env, cwd=folder, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        reaper.register_group(run.process.pid)  # a pod stops with a test run, however it ends
        started = now()
        await self._patch(meta, {"phase": "Running", "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}], "startTime": started,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": started}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [self._container_status(container, {"running": {"startedAt": started}})],
        })  # fmt: skip
        with run.log_file.open("w") as out:
            assert run.process.stdout is not None
            async for raw in run.process.stdout:
                out.write(f"{now()} {raw.decode(errors='replace').rstrip(chr(10))}\n")
                out.flush()
        code = await run.process.wait()
        reaper.unregister(run.process.pid)
        code = 128 - code if code < 0 else code  # killed by signal N: 128 + N
        message = termination.read_text()[:MESSAGE_LIMIT] if termination.exists() else ""
        await self._report(run, code, message, started)

    def _container_status(self, container: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        running = "running" in state
        return {"name": container["name"], "image": container.get("image", ""), "imageID": "",
                "ready": running, "started": running, "restartCount": 0, "state": state}  # fmt: skip

    async def _report(
        self,
        run: Running,
        code: int | None,
        message: str,
        started: str | None = None,
        reason: str | None = None,
    ) -> None:
        container = run.pod["spec"]["containers"][0]
        if code is None:  # never started
            code, reason = 128, "ContainerCannotRun"
        elif reason is None:
            reason = "Completed" if code == 0 else "Error"
        if (
            not message
            and code != 0
            and container.get("terminationMessagePolicy") == "FallbackToLogsOnError"
        ):
            lines = (
                run.log_file.read_text().splitlines()[-FALLBACK_LINES:]
                if run.log_file.exists()
                else []
            )
            message = "\n".join(line.split(" ", 1)[-1] for line in lines)[-FALLBACK_BYTES:]
        terminated = {"exitCode": code, "reason": reason, "startedAt": started or now(),
                      "finishedAt": now(), **({"message": message} if message else {})}  # fmt: skip
        status = {"phase": "Succeeded" if code == 0 else "Failed",
                  "conditions": [{"type": t, "status": "False", "reason": "PodCompleted",
                                  "lastTransitionTime": now()} for t in ("ContainersReady", "Ready")],
                  "containerStatuses": [self._container_status(container, {"terminated": terminated})]}  # fmt: skip
        await self._patch(run.pod["metadata"], status)
        run.exited.set()

    async def _patch(self, meta: dict[str, Any], status: dict[str, Any]) -> None:
        """Report ``status``, retrying while the API server is away (a restart), as a kubelet
        does; a pod that is gone (404) or refuses the update (4xx) is left alone."""
        while True:
            try:
                await self.core.patch_namespaced_pod_status(
                    meta["name"], meta["namespace"], {"status": status}
                )
                return
            except client.ApiException as err:
                if err.status != 429 and err.status < 500:
                    return
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass
            await asyncio.sleep(0.5)

    async def delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        run = self.running.get((meta["namespace"], meta["name"]))
        if run is not None and not run.deleting:
            run.deleting = True
            if run.process is not None and run.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.process.pid, signal.SIGTERM)
                grace = meta.get("deletionGracePeriodSeconds") or 30
                try:
                    await asyncio.wait_for(run.exited.wait(), grace)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(run.process.pid, signal.SIGKILL)
                    await run.exited.wait()
        elif run is not None:
            return  # already being deleted
        body = client.V1DeleteOptions(grace_period_seconds=0, preconditions={"uid": meta["uid"]})
        with contextlib.suppress(client.ApiException):
            await self.core.delete_namespaced_pod(meta["name"], meta["namespace"], body=body)
        self.running.pop((meta["namespace"], meta["name"]), None)

    # -- logs ----------------------------------------------------------------------------------

    async def logs(self, request: web.Request) -> web.StreamResponse:
        from harness.real_cluster.pod_logs import serve_log

        key = (request.match_info["namespace"], request.match_info["pod"])
        run = self.running.get(key)
        if run is None:
            raise web.HTTPNotFound(text=f"pod {key[0]}/{key[1]} is not on this kubelet")
        return await serve_log(request, run.log_file, run.exited)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", type=Path, required=True)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--pythonpath", action="append", default=[])
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    kubelet = Kubelet(
        args.work_dir, args.pythonpath + os.environ.get("PYTHONPATH", "").split(os.pathsep)
    )
    asyncio.run(kubelet.run(args.kubeconfig, args.port, args.cert_dir))


if __name__ == "__main__":
    main()
