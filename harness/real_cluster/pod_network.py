"""The network a control plane's real nodes live on: each node a network namespace of its
own (its "machine": the kubelet, kube-proxy and ``hostNetwork`` pods live there, so two nodes'
pods can listen on the same port, as on two VMs), all on one LAN, a bridge in a namespace of
the run's that one veth pair joins to this machine.

Why namespaces: kube-proxy and the kubelets write iptables chains, and the CNI plugins a
bridge; in the machine's own namespace two runs (two pytest workers, a test run beside
``make cluster``) would overwrite each other's chains, and a killed run would leave them
behind. Here each namespace goes, with every interface, route and chain in it, once its last
process is gone, however the run ends. Docker's ``FORWARD DROP`` (where a Docker engine runs)
is the machine's policy, not these namespaces', so the CNI chain needs no ``firewall`` plugin.

Addresses (private, all on interfaces this run creates; nothing leaves the machine):

- a /27 on the LAN, picked from 10.192.0.0/12 by the LAN holder's pid (unique among live
  processes, so among live runs) and checked against the machine's addresses: ``.1`` is the
  machine's end (kube-apiserver listens there, so the nodes and the pods reach it), ``.2`` the
  LAN bridge's (CoreDNS listens there), ``.3`` onwards one per node (its kubelet's address);
- in node ``i``, the bridge ``cbr0`` with the gateway of its pod range ``10.244.<i>.0/24``, a
  route to each other node's pod range through that node (pods talk to pods directly), one
  for the Services' range (kube-proxy rewrites those), and no default route: a pod reaches
  the LAN (the API server, CoreDNS) masqueraded to its node's address, and nothing beyond.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

from harness.real_cluster.components import Component, ControlPlaneError, stop_all

BLOCK = ipaddress.ip_network("10.192.0.0/12")
SLOT = 32  # addresses per run
POD_RANGE = ipaddress.ip_network("10.244.0.0/16")
SERVICE_CIDR = ipaddress.ip_network("10.0.0.0/24")  # the API server's ClusterIPs
# Present once the br_netfilter module is loaded (each node sets it in its own namespace).
BRIDGE_NETFILTER = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
LAN_BRIDGE, POD_BRIDGE = "lan0", "cbr0"
UPLINK = "uplink"  # the LAN's end of the veth pair to this machine
NODE_LINK = "eth0"  # a node's end of its veth pair to the LAN


def pod_cidr(index: int) -> ipaddress.IPv4Network:
    """Node ``index``'s pod range."""
    return ipaddress.ip_network(f"10.244.{index}.0/24")


def _own_namespace(pid: int | None) -> bool:
    """Whether ``pid`` has left this process's network namespace (``unshare`` has run)."""
    try:
        return pid is not None and os.readlink(f"/proc/{pid}/ns/net") != os.readlink(
            "/proc/self/ns/net"
        )
    except OSError:
        return False


def _used_addresses() -> set[ipaddress.IPv4Address]:
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    return {ipaddress.ip_interface(line.split()[3]).ip for line in out.splitlines()}


def _links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise ControlPlaneError(
            f"setting up the pods' network failed: {' '.join(argv)}: {done.stderr}"
        )


class PodNetwork:
    """The LAN and ``nodes`` node namespaces, each held by a ``sleep`` of its own (a node's
    outlives its processes: a node stopped and started again is a machine rebooted)."""

    def __init__(self, directory: Path, nodes: int) -> None:
        if nodes > SLOT - 4:
            raise ControlPlaneError(f"at most {SLOT - 4} nodes per control plane, not {nodes}")
        self.directory, self.nodes = directory, nodes
        self.lan: Component | None = None
        self.node_holders: list[Component] = []
        self.base: ipaddress.IPv4Address | None = None
        self.link = ""

    # -- addresses ----------------------------------------------------------------------------

    def _at(self, offset: int) -> str:
        assert self.base is not None, "the network is not up"
        return str(self.base + offset)

    @property
    def host_ip(self) -> str:
        return self._at(1)

    @property
    def lan_ip(self) -> str:
        return self._at(2)

    def node_ip(self, index: int) -> str:
        return self._at(3 + index)

    @staticmethod
    def _enter(holder: Component | None) -> list[str]:
        assert holder is not None and holder.pid is not None, "the network is not up"
        return ["nsenter", f"--net=/proc/{holder.pid}/ns/net", "--"]

    @property
    def enter_lan(self) -> list[str]:
        """The argv prefix that runs a command on the LAN (CoreDNS)."""
        return self._enter(self.lan)

    def enter_node(self, index: int) -> list[str]:
        """The argv prefix that runs a command in node ``index``'s network."""
        return self._enter(self.node_holders[index])

    # -- up and down --------------------------------------------------------------------------

    def _holder(self, name: str) -> Component:
        holder = Component(
            name,
            ["unshare", "--net", "--", "sleep", "infinity"],
            self.directory / f"{name}.log",
            ready=lambda: _own_namespace(holder.pid),
        )
        return holder.start()

    def up(self) -> PodNetwork:
        if not BRIDGE_NETFILTER.exists():
            raise ControlPlaneError(
                "the nodes' network needs the br_netfilter kernel module (a pod reaching a "
                "Service on its own node passes the pod bridge, and kube-proxy's rules see it "
                "only so; kubeadm and kind need it too): sudo modprobe br_netfilter"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self.lan = self._holder("lan")
            self._pick_slot()
            self._wire_lan()
            for index in range(self.nodes):
                self.node_holders.append(self._holder(f"node-{index}"))
                self._wire_node(index)
        except BaseException:
            self.down()
            raise
        return self

    def _pick_slot(self) -> None:
        assert self.lan is not None and self.lan.pid is not None
        used, links = _used_addresses(), _links()
        slots = BLOCK.num_addresses // SLOT
        for step in range(slots):
            slot = (self.lan.pid + step) % slots
            base = BLOCK.network_address + slot * SLOT
            block = ipaddress.ip_network(f"{base}/27")
            if f"ajx{slot}" not in links and not any(a in block for a in used):
                self.base, self.link = base, f"ajx{slot}"
                return
        raise ControlPlaneError(f"no free /27 left in {BLOCK} for the nodes' network")

    def _wire_lan(self) -> None:
        assert self.lan is not None
        _run(["ip", "link", "add", self.link, "type", "veth", "peer", "name", UPLINK, "netns",
              str(self.lan.pid)])  # fmt: skip
        _run(["ip", "addr", "add", f"{self.host_ip}/27", "dev", self.link])
        _run(["ip", "link", "set", self.link, "up"])
        _run([*self.enter_lan, "sh", "-ec", " && ".join([
            "ip link set lo up",
            f"ip link add {LAN_BRIDGE} type bridge",
            f"ip addr add {self.lan_ip}/27 dev {LAN_BRIDGE}",
            f"ip link set {UPLINK} master {LAN_BRIDGE}",
            f"ip link set {UPLINK} up",
            f"ip link set {LAN_BRIDGE} up",
        ])])  # fmt: skip

    def _wire_node(self, index: int) -> None:
        holder = self.node_holders[index]
        lan_end = f"n{index}"
        cidr = pod_cidr(index)
        routes = [
            f"ip route add {pod_cidr(other)} via {self.node_ip(other)}"
            for other in range(self.nodes)
            if other != index
        ]
        _run([*self.enter_lan, "ip", "link", "add", lan_end, "type", "veth", "peer", "name",
              NODE_LINK, "netns", str(holder.pid)])  # fmt: skip
        _run([*self.enter_lan, "sh", "-ec",
              f"ip link set {lan_end} master {LAN_BRIDGE} && ip link set {lan_end} up"])  # fmt: skip
        _run([*self.enter_node(index), "sh", "-ec", " && ".join([
            "ip link set lo up",
            f"ip addr add {self.node_ip(index)}/27 dev {NODE_LINK}",
            f"ip link set {NODE_LINK} up",
            f"ip link add {POD_BRIDGE} type bridge",
            f"ip addr add {cidr[1]}/{cidr.prefixlen} dev {POD_BRIDGE}",
            f"ip link set {POD_BRIDGE} up",
            *routes,
            # No default route, but a route for ClusterIPs, which kube-proxy rewrites: a
            # process of the node's own network (a hostNetwork pod) needs one to connect.
            f"ip route add {SERVICE_CIDR} dev {NODE_LINK}",
            "sysctl -qw net.ipv4.ip_forward=1",
            # A pod's traffic through a Service back to its own node's bridge passes iptables.
            "sysctl -qw net.bridge.bridge-nf-call-iptables=1",
            f"iptables -t nat -A POSTROUTING -s {cidr} ! -d {POD_RANGE} -o {NODE_LINK} "
            "-j MASQUERADE",
        ])])  # fmt: skip

    def down(self) -> None:
        """Stop the holders; each namespace goes with the last process in it (and with it
        its veth pairs, bridges and chains)."""
        stop_all([h for h in (*self.node_holders, self.lan) if h is not None], grace=2)
        self.node_holders.clear()
        self.lan = None
        if self.link:
            subprocess.run(["ip", "link", "del", self.link], capture_output=True)

    @property
    def components(self) -> list[Component]:
        return [h for h in (self.lan, *self.node_holders) if h is not None]
