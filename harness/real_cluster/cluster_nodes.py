"""A control plane's node side: the pods' network, kube-proxy and CoreDNS in it, and the real
nodes (``node.py``), started together and waited on until every node is Ready with its
accelerator advertised."""

from __future__ import annotations

import secrets
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path

from harness import reaper
from harness.real_cluster import cgroups, cluster_services, images
from harness.real_cluster.api import Api
from harness.real_cluster.cluster_services import PROXY_HEALTH_PORT
from harness.real_cluster.components import (
    Component,
    ControlPlaneError,
    http_ok,
    log_tail,
    stop_all,
)
from harness.real_cluster.host_limits import check_room_for
from harness.real_cluster.node import RealNode, containerd_config
from harness.real_cluster.nodes import Node
from harness.real_cluster.pod_network import PodNetwork

NODE_START_S = 240.0  # seven nodes at once on two busy cores, a first seed included


class ClusterNodes:
    """The network, services and nodes of the control plane whose state is ``directory``."""

    def __init__(self, directory: Path, nodes: tuple[Node, ...]) -> None:
        self.directory = directory
        self.specs = nodes
        self.network = PodNetwork(directory / "network", len(nodes))
        self.cgroup = f"/{cgroups.TOP}/{directory.name}-{secrets.token_hex(4)}"
        self.services: list[Component] = []
        self.nodes: dict[str, RealNode] = {}
        self.images: images.Images | None = None
        self.started_in: dict[str, float] = {}

    def network_up(self) -> PodNetwork:
        """First: the API server listens on the network's address on this machine."""
        return self.network.up()

    def up(
        self,
        api: Api,
        binaries: dict[str, Path],
        kubeconfig: Callable[[str], Path],  # identity -> its kubeconfig
        tls: Callable[[str, str], tuple[Path, Path]],  # node name, its address -> cert, key
        ca: Path,
    ) -> None:
        """CoreDNS and every node (each with its kube-proxy), then wait for them all. With no
        nodes (a bench of API objects only), nothing: a control plane alone."""
        if not self.specs:
            return
        started = time.monotonic()
        archives = images.build()
        self.images = images.seeded(
            archives, self.directory, containerd_config(self.directory / "cni-unused")
        )
        self.started_in["images"] = time.monotonic() - started
        for obj in cluster_services.kube_dns(self.network):
            api.apply(obj)
        self.services = [
            cluster_services.coredns(
                binaries["coredns"],
                kubeconfig("controllers"),
                "controllers",
                self.network,
                self.directory,
            ),
        ]
        for service in self.services:
            service.spawn()
        reaper.register_cgroup(self.cgroup)
        reaper.register_folder(self.directory / "nodes")  # a killed run's nodes' state
        for index, spec in enumerate(self.specs):
            self.nodes[spec.name] = RealNode(
                spec, index, self.directory / "nodes" / spec.name,
                network=self.network, kubeconfig=kubeconfig(f"node-{spec.name}"),
                proxy_kubeconfig=kubeconfig("kube-proxy"),
                tls=tls(spec.name, self.network.node_ip(index)), ca=ca,
                cgroup_parent=self.cgroup, binaries=binaries, images=self.images,
            )  # fmt: skip
        nodes_started = time.monotonic()
        self.start(list(self.nodes), api)
        for service in self.services:
            service.wait_ready()
        self.started_in["nodes"] = time.monotonic() - nodes_started

    def start(self, names: list[str], api: Api, timeout: float = NODE_START_S) -> None:
        """Start the nodes ``names`` that are not running (again, after :meth:`stop`: a
        machine booted afresh) and wait until each is Ready."""
        names = [name for name in names if self.nodes[name].component is None]
        check_room_for(len(names))
        components = [
            self.nodes[name].spawn(
                lambda n=name: node_ready(api, self.nodes[n].node, self.nodes[n].ip)
            )
            for name in names
        ]
        deadline = time.monotonic() + timeout
        for name, component in zip(names, components, strict=True):
            try:
                component.wait_ready(max(1.0, deadline - time.monotonic()))
            except ControlPlaneError as err:
                kubelet = self.nodes[name].log
                raise ControlPlaneError(f"{err}\nkubelet:\n{log_tail(kubelet)}") from None

    def stop(self, name: str, *, kill: bool = False) -> None:
        """Node ``name``'s machine goes (``kill``: at once, no grace)."""
        node = self.nodes[name]
        node.kill() if kill else node.stop()

    def preempt(self, names: list[str], api: Api) -> None:
        """Spot VMs preempted: the machines ``names`` stop at once (kubelets, containers and
        all), and their Nodes are deleted, as GKE deletes a preempted VM's (PodGC then fails
        and deletes their pods). :meth:`start` boots them again: each kubelet registers its
        Node."""
        for name in names:
            self.stop(name, kill=True)
        for name in names:
            api.delete(f"/api/v1/nodes/{name}")

    def down(self) -> None:
        try:
            stop_all([n.component for n in self.nodes.values() if n.component is not None], grace=5)
            for node in self.nodes.values():
                node.stop()  # its cgroups
                node.clean()
            for service in reversed(self.services):
                service.stop()
            self.services.clear()
            self.network.down()
            cgroups.remove(self.cgroup)
            reaper.unregister_cgroup(self.cgroup)
        finally:
            if self.images is not None and self.images.lease is not None:
                self.images.lease.release()

    @property
    def components(self) -> list[Component]:
        nodes = [n.component for n in self.nodes.values() if n.component is not None]
        return [*self.network.components, *self.services, *nodes]


def node_ready(api: Api, spec: Node, ip: str | None = None) -> bool:
    """Whether the API server shows ``spec`` Ready, with its accelerator allocatable (the
    device plugin registered), and (a real node at ``ip``) its kube-proxy serving."""
    if ip is not None and not http_ok(f"http://{ip}:{PROXY_HEALTH_PORT}/healthz"):
        return False
    try:
        node = api.get(f"/api/v1/nodes/{spec.name}")
    except (urllib.error.URLError, OSError):
        return False
    status = node.get("status") or {}
    ready = any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ()
    )
    if not ready:
        return False
    if accelerator := spec.accelerator:
        resource, count = accelerator
        return (status.get("allocatable") or {}).get(resource) == str(count)
    return True
