"""What a cluster runs beside its control plane for its nodes' pods: kube-scheduler (on this
machine, like the other controllers), kube-proxy on every node (the ``kubernetes`` Service and
kube-dns's ClusterIP; ``node_init.py`` starts it), and CoreDNS on the nodes' LAN.

CoreDNS answers for ``cluster.local`` only, from the API server (Services, pods, and the
headless Service of each JobSet, whose pods' host names JAX's coordinator address uses); it has
no ``forward``: a name outside the cluster gets no answer, so no query leaves the machine. It
runs as a process in the pods' network (the project builds no image of it) behind the
``kube-dns`` Service, as a cluster's DNS is: a selector-less Service whose EndpointSlice names
CoreDNS's address.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.real_cluster.components import Component, free_port, http_ok, https_ok
from harness.real_cluster.pod_network import POD_RANGE, PodNetwork

CLUSTER_DNS = "10.0.0.10"  # kube-dns's ClusterIP (in the API server's service range)
DNS_PORT, DNS_READY_PORT = 53, 8181
PROXY_HEALTH_PORT = 10256


def kube_scheduler(binary: Path, kubeconfig: Path, log: Path) -> Component:
    port = free_port()
    return Component(
        "kube-scheduler",
        [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
        ],
        log,
        lambda: https_ok(f"https://127.0.0.1:{port}/healthz"),
        ports=(port,),
    )


def kube_proxy_argv(binary: Path, kubeconfig: Path, node: str, ip: str) -> list[str]:
    """A node's kube-proxy, in iptables mode in the node's network (its chains are that
    namespace's). Every setting it would write outside that namespace is off: conntrack's
    table size and timeouts (machine-wide sysctls), and its own ``oom_score_adj``. Flags, not
    a config file: kube-proxy watches its config file (an inotify instance a node, of the 128
    a user has on this machine)."""
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        "--proxy-mode=iptables",
        f"--cluster-cidr={POD_RANGE}",
        f"--hostname-override={node}",
        f"--bind-address={ip}",
        f"--healthz-bind-address={ip}:{PROXY_HEALTH_PORT}",
        "--metrics-bind-address=127.0.0.1:10249",
        "--nodeport-addresses=primary",
        "--oom-score-adj=0",
        "--conntrack-max-per-core=0",
        "--conntrack-min=0",
        "--conntrack-tcp-timeout-established=0s",
        "--conntrack-tcp-timeout-close-wait=0s",
        "--iptables-localhost-nodeports=false",
        "--v=1",
    ]


def coredns(
    binary: Path, kubeconfig: Path, identity: str, network: PodNetwork, directory: Path
) -> Component:
    corefile = directory / "Corefile"
    corefile.write_text(
        f""".:{DNS_PORT} {{
    bind {network.lan_ip}
    errors
    health {network.lan_ip}:8080
    ready {network.lan_ip}:{DNS_READY_PORT}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} {identity}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 30
}}
"""
    )
    return Component(
        "coredns",
        [*network.enter_lan, str(binary), "-conf", str(corefile)],
        directory / "logs" / "coredns.log",
        lambda: http_ok(f"http://{network.lan_ip}:{DNS_READY_PORT}/ready"),
    )


def kube_dns(network: PodNetwork) -> list[dict[str, Any]]:
    """The ``kube-dns`` Service (the kubelets' ``clusterDNS``) and its EndpointSlice."""
    ports = [{"name": "dns", "port": DNS_PORT, "protocol": "UDP"},
             {"name": "dns-tcp", "port": DNS_PORT, "protocol": "TCP"}]  # fmt: skip
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": "kube-system",
                "labels": {"k8s-app": "kube-dns"},
            },
            "spec": {"clusterIP": CLUSTER_DNS, "ports": ports},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kube-dns-coredns",
                "namespace": "kube-system",
                "labels": {"kubernetes.io/service-name": "kube-dns"},
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [network.lan_ip], "conditions": {"ready": True}}],
            "ports": ports,
        },
    ]
