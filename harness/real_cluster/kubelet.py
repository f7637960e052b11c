"""A fake kubelet for the real control plane: it registers Nodes with TPU and GPU capacity and
GKE's labels, binds pending pods to them (there is no kube-scheduler), runs each pod's
containers as local processes (``pod_runs.py``), and reports what a kubelet reports.

- Each container's ``command``/``args`` run with Kubernetes' ``$(VAR)`` expansion and the env a
  kubelet builds (values, ``fieldRef``s, Secrets, the API server's ``KUBERNETES_SERVICE_*``),
  with JAX on the CPU standing in for the pod's chips, as the local backend runs them. A
  container without a command runs its image's entrypoint: the binaries built here (JobSet's
  in-place restart agent), by image name.
- Each process gets a private mount namespace whose ``/etc/hosts`` maps its JobSet's pod DNS
  names (``<jobset>-<rjob>-<job>-<pod>.<jobset>``) to 127.0.0.1, so JAX's coordinator
  address resolves as on a cluster, and whose service-account folder holds a token bound to
  the pod. The machine's own files are never touched.
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
import functools
import logging
import os
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web
from kubernetes_asyncio import client, config, watch

from airflow_provider_jax.backends.local.localize import free_ports, local_coordinates
from airflow_provider_jax.runtime.env import COORDINATOR_PORT_ENV
from harness.real_cluster import containers
from harness.real_cluster.containers import now
from harness.real_cluster.nodes import NODES, affinity_allows, fits, selector_matches
from harness.real_cluster.pod_env import container_env, hosts_file
from harness.real_cluster.pod_runs import Entrypoints, PodRun, Setup, base_env

log = logging.getLogger("fake-kubelet")


class Kubelet:
    def __init__(self, work_dir: Path, pythonpath: list[str], entrypoints: Entrypoints) -> None:
        self.work_dir, self.pythonpath, self.entrypoints = work_dir, pythonpath, entrypoints
        self.running: dict[tuple[str, str], PodRun] = {}  # (namespace, pod name)
        self.bound: dict[str, str] = {}  # pod uid -> node
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> the pod as last seen
        self.tasks: set[asyncio.Task[Any]] = set()
        # (namespace, JobSet) -> its coordinator and MegaScale ports: every Node here shares
        # this machine's network, where on GKE each host has an address of its own, so two
        # slices at the same default port would join each other's coordination service.
        self.ports: dict[tuple[str, str], list[int]] = {}
        self.gone: set[str] = set()  # Nodes of ours deleted (a drill), until created again
        self.port = 0

    async def run(self, kubeconfig: str, port: int, cert_dir: Path) -> None:
        await config.load_kube_config(kubeconfig)
        cluster = yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]
        self.ca = Path(cluster["certificate-authority"]).read_bytes()
        self.apiserver = urllib.parse.urlsplit(cluster["server"])
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
        self.port = port
        await asyncio.gather(self._watch_pods(), self._watch_nodes())

    async def _register(self, port: int) -> None:
        for node in NODES:
            body = {"metadata": {"name": node.name, "labels": dict(node.labels)}}
            with contextlib.suppress(client.ApiException):
                await self.core.create_node(body)
            await self._node_ready(node, port)

    async def _node_ready(self, node: Any, port: int) -> None:
        """Report ``node`` Ready with its capacity, as a kubelet does once it registered."""
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
        # The API server taints a new Node not-ready; the node lifecycle controller (not
        # run here) lifts the taint once the node reports Ready. Kueue's topology-aware
        # admission reads taints, so the kubelet lifts it itself.
        await self.core.patch_node(node.name, {"spec": {"taints": []}})

    # -- nodes that go and come back (a drill: a Spot slice's VMs preempted, then back) --------

    async def _watch_nodes(self) -> None:
        """A Node of ours deleted is a machine gone: its pods fail as disrupted and go, and
        nothing is bound to it. Created again, it registers, and waiting pods are bound."""
        ours = {n.name: n for n in NODES}

        async def listed(items: list[dict[str, Any]]) -> None:
            present = {item["metadata"]["name"] for item in items}
            self.gone = {name for name in ours if name not in present}

        async def changed(kind: str, obj: dict[str, Any]) -> None:
            name = obj["metadata"]["name"]
            if name not in ours:
                return
            if kind == "DELETED" and name not in self.gone:
                self.gone.add(name)
                await self._lost(name)
            elif kind == "ADDED" and name in self.gone:
                self.gone.discard(name)
                await self._node_ready(ours[name], self.port)
                for pod in list(self.pods.values()):
                    if not pod["spec"].get("nodeName"):
                        await self.bind(pod)

        await _list_and_watch("node", self.core.list_node, listed, changed)

    async def _lost(self, node: str) -> None:
        """Node ``node`` is gone: its pods fail as PodGC fails them (``DisruptionTarget``),
        their processes are killed, and they are deleted."""
        for uid, bound in list(self.bound.items()):
            pod = self.pods.get(uid)
            if (
                bound != node
                or pod is None
                or pod["status"].get("phase") in ("Succeeded", "Failed")
            ):
                continue
            meta = pod["metadata"]
            condition = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                         "message": f"PodGC: node {node} no longer exists",
                         "lastTransitionTime": now()}  # fmt: skip
            run = self.running.get((meta["namespace"], meta["name"]))
            if run is not None and not run.deleting:
                await run.delete(0)
            await self._patch(meta, {"phase": "Failed", "conditions": [condition]})
            self._spawn(self.delete(pod))

    # -- the pod loop --------------------------------------------------------------------------

    async def _watch_pods(self) -> None:
        async def listed(items: list[dict[str, Any]]) -> None:
            for pod in items:
                await self.changed("ADDED", pod)

        await _list_and_watch("pod", self.core.list_pod_for_all_namespaces, listed, self.changed)

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
            folder = self.work_dir / meta["namespace"] / meta["name"]
            run = PodRun(pod, folder, self.entrypoints, functools.partial(self._patch, meta))
            self.running[key] = run
            self._spawn(run.run(functools.partial(self._setup, run)))

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
            if n.name not in self.gone
            and selector_matches(n, pod)
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

    async def _setup(self, run: PodRun) -> Setup:
        """The pod's files, and how each of its containers' env is built as it starts."""
        pod, folder = run.pod, run.folder
        meta = pod["metadata"]
        folder.mkdir(parents=True, exist_ok=True)
        sa_folder: list[Path] = []  # the service account's files, made once per start

        async def env(container: dict[str, Any]) -> dict[str, str]:
            with contextlib.suppress(client.ApiException):  # as the pod is now (gone: as was)
                response = await self.core.read_namespaced_pod(
                    meta["name"], meta["namespace"], _preload_content=False
                )
                run.pod["metadata"] = (await response.json())["metadata"]
            own = await container_env(self.core, run.pod, container)
            if COORDINATOR_PORT_ENV in own:
                own.update(local_coordinates(*self._ports_of(meta)))
            extra = {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                     "KUBERNETES_SERVICE_PORT": str(self.apiserver.port)}  # fmt: skip
            return {**base_env(pod, container, folder, self.pythonpath), **extra, **own}

        async def mounts(container: dict[str, Any]) -> str:
            mounted = containers.volume_mounts(pod, container, folder)
            if containers.sa_volume_mount(container):
                if not sa_folder:
                    sa_folder.append(await self._service_account(pod, folder))
                mounted.append((sa_folder[0], containers.SA_PATH))
            return containers.mount_script(mounted, folder)

        hosts = hosts_file(pod, self.pods.values(), folder)
        return Setup(env, mounts, hosts, pod["spec"].get("hostname") or meta["name"])

    async def _service_account(self, pod: dict[str, Any], folder: Path) -> Path:
        """A token bound to the pod for its service account, as the kubelet projects it."""
        meta = pod["metadata"]
        account = pod["spec"].get("serviceAccountName") or "default"
        body = {"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                            "name": meta["name"], "uid": meta["uid"]},
                         "expirationSeconds": 3600}}  # fmt: skip
        made = await self.core.create_namespaced_service_account_token(
            account, meta["namespace"], body
        )
        return containers.write_service_account(
            folder, made.status.token, self.ca, meta["namespace"]
        )

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
        if run is not None:
            if run.deleting:
                return  # already being deleted
            await run.delete(float(meta.get("deletionGracePeriodSeconds") or 30))
        body = client.V1DeleteOptions(grace_period_seconds=0, preconditions={"uid": meta["uid"]})
        with contextlib.suppress(client.ApiException):
            await self.core.delete_namespaced_pod(meta["name"], meta["namespace"], body=body)
        self.running.pop((meta["namespace"], meta["name"]), None)

    # -- logs ----------------------------------------------------------------------------------

    async def logs(self, request: web.Request) -> web.StreamResponse:
        from harness.real_cluster.pod_logs import serve_log

        key = (request.match_info["namespace"], request.match_info["pod"])
        run = self.running.get(key)
        instance = run.instance(request.match_info["container"]) if run else None
        if instance is None:
            raise web.HTTPNotFound(text=f"pod {key[0]}/{key[1]} is not on this kubelet")
        return await serve_log(request, instance.log_file, instance.exited)


async def _list_and_watch(
    kind: str,
    list_call: Any,
    listed: Callable[[list[dict[str, Any]]], Awaitable[None]],
    changed: Callable[[str, dict[str, Any]], Awaitable[None]],
) -> None:
    """List ``kind`` (every namespace), then watch it from there for good; listed again
    after a 410 or a dropped connection, as an informer does."""
    version = None
    while True:
        try:
            if version is None:
                response = await list_call(_preload_content=False)
                body = await response.json()
                version = body["metadata"]["resourceVersion"]
                await listed(body["items"])
            async with watch.Watch().stream(
                list_call,
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
                    if event["type"] != "BOOKMARK":  # a bookmark carries no object
                        await changed(event["type"], obj)
        except (TimeoutError, client.ApiException, aiohttp.ClientError, OSError) as err:
            log.warning("%s watch ended (%s); listing again", kind, err)
            version = None
            await asyncio.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert-dir", type=Path, required=True)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--pythonpath", action="append", default=[])
    parser.add_argument(
        "--entrypoint", action="append", default=[], help="IMAGE=BINARY: what an image runs"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    entrypoints = dict(item.split("=", 1) for item in args.entrypoint)
    kubelet = Kubelet(
        args.work_dir,
        args.pythonpath + os.environ.get("PYTHONPATH", "").split(os.pathsep),
        entrypoints,
    )
    asyncio.run(kubelet.run(args.kubeconfig, args.port, args.cert_dir))


if __name__ == "__main__":
    main()
