"""A STAND-IN kubelet, for the nodes this machine cannot hold as real ones: the 16 hosts of a
tpu7x cube (``nodes.CUBE_NODES``; the dynamic slicing tests). Every other node of the test
cluster is a real kubelet (``node.py``). This one registers its Nodes with their capacity and
GKE's labels and taints, renews their Leases as a kubelet does, and runs the pods that
kube-scheduler binds to them as local processes (``pod_runs.py``), reporting what a kubelet
reports. What it does not do as a kubelet does, the tests that use it do not depend on:

- Each container's ``command``/``args`` run with Kubernetes' ``$(VAR)`` expansion and the env a
  kubelet builds (values, ``fieldRef``s, Secrets, the API server's ``KUBERNETES_SERVICE_*``),
  with JAX on the CPU standing in for the pod's chips, as the local backend runs them. A
  container without a command runs its image's entrypoint: the binaries built here (JobSet's
  in-place restart agent), by image name. The image itself is not run.
- Each process gets a private mount namespace whose ``/etc/hosts`` maps its JobSet's pod DNS
  names (``<jobset>-<rjob>-<job>-<pod>.<jobset>``) to 127.0.0.1 (every pod shares this
  machine's network), and whose service-account folder holds a token bound to the pod. The
  machine's own files are never touched.
- Status goes back as the kubelet writes it: Running, then Succeeded or Failed with the exit
  code and the termination message (``FallbackToLogsOnError``: the log's tail). A command
  that is not on the PATH never starts: Failed at once, ``StartError`` with exit code 128 and
  the runtime's message, as kubelet reports containerd's failure to start the container.
- ``pods/log`` is served over HTTPS on the Nodes' kubelet port, for the API server to proxy.
- A pod being deleted gets SIGTERM, SIGKILL after its grace period, then its final delete.
- Stopped, it deletes its Nodes (``--delete-nodes-on-exit``).
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
from harness.real_cluster.nodes import CUBE_NODES
from harness.real_cluster.pod_env import container_env, hosts_file
from harness.real_cluster.pod_runs import Entrypoints, PodRun, Setup, base_env

log = logging.getLogger("stand-in-kubelet")
NODES = CUBE_NODES
LEASE_S = 40  # a Lease's duration; renewed every quarter of it, as the kubelet does


class Kubelet:
    def __init__(self, work_dir: Path, pythonpath: list[str], entrypoints: Entrypoints) -> None:
        self.work_dir, self.pythonpath, self.entrypoints = work_dir, pythonpath, entrypoints
        self.running: dict[tuple[str, str], PodRun] = {}  # (namespace, pod name)
        self.pods: dict[str, dict[str, Any]] = {}  # uid -> the pod as last seen
        self.tasks: set[asyncio.Task[Any]] = set()
        # (namespace, JobSet) -> its coordinator and MegaScale ports: every Node here shares
        # this machine's network, where on GKE each host has an address of its own, so two
        # slices at the same default port would join each other's coordination service.
        self.ports: dict[tuple[str, str], list[int]] = {}
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
        await asyncio.gather(self._watch_pods(), self._renew_leases())

    async def _register(self, port: int) -> None:
        for node in NODES:
            body = {"metadata": {"name": node.name, "labels": dict(node.labels)},
                    "spec": {"taints": node.taints}}  # fmt: skip
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

    async def _renew_leases(self) -> None:
        """Each Node's Lease in ``kube-node-lease``, renewed as a kubelet renews its own: the
        node lifecycle controller marks a node without one unreachable."""
        leases = client.CoordinationV1Api(self.api)
        while True:
            for node in NODES:
                body = {"metadata": {"name": node.name, "namespace": "kube-node-lease"},
                        "spec": {"holderIdentity": node.name, "leaseDurationSeconds": LEASE_S,
                                 "renewTime": now()}}  # fmt: skip
                try:
                    await leases.replace_namespaced_lease(node.name, "kube-node-lease", body)
                except client.ApiException as err:
                    if err.status != 404:
                        log.warning("renewing %s's Lease: %s", node.name, err.reason)
                        continue
                    await leases.create_namespaced_lease("kube-node-lease", body)
                except (aiohttp.ClientError, OSError) as err:
                    log.warning("renewing %s's Lease: %s", node.name, err)
            await asyncio.sleep(LEASE_S / 4)

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
            return
        self.pods[uid] = pod
        node = spec.get("nodeName")
        ours = node in {n.name for n in NODES}
        if meta.get("deletionTimestamp"):
            if ours:
                self._spawn(self.delete(pod))
            return
        if ours and key not in self.running and pod["status"].get("phase") in (None, "Pending"):
            folder = self.work_dir / meta["namespace"] / meta["name"]
            run = PodRun(pod, folder, self.entrypoints, functools.partial(self._patch, meta))
            self.running[key] = run
            self._spawn(run.run(functools.partial(self._setup, run)))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

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
            extra = {"KUBERNETES_SERVICE_HOST": self.apiserver.hostname or "127.0.0.1",
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
