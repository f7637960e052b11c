"""The network a control plane's real nodes live on: a network namespace of the run's own,
joined to this machine by one veth pair, with the pods' bridge inside.

Why a namespace of its own: kube-proxy and the kubelets write iptables chains, and the CNI
plugins a bridge; in the machine's own namespace two runs (two pytest workers, a test run
beside ``make cluster``) would overwrite each other's chains, and a killed run would leave
them behind. Here they are the namespace's: it goes, with every interface, route and chain in
it, once its last process is gone, however the run ends. Docker's ``FORWARD DROP`` (where a
Docker engine runs) is the machine's policy, not this namespace's, so the CNI chain needs no
``firewall`` plugin.

Addresses (private, all on interfaces this run creates; nothing leaves the machine):

- a /27 on the veth pair, picked from 10.192.0.0/12 by the holder's pid (unique among live
  processes, so among live runs) and checked against the machine's addresses: ``.1`` is the
  machine's end (kube-apiserver listens there, so the nodes and the pods reach it), ``.2``
  the namespace's (CoreDNS listens there), ``.3`` onwards one per node (its kubelet's
  address, reached from the API server on the machine through the veth);
- inside, the bridge ``cbr0`` with the gateway of each node's pod range (``10.244.<i>.0/24``):
  pods of different nodes reach each other through it, and pods' traffic to the machine is
  masqueraded to ``.2``, so the machine needs no route to the pods.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

from harness.real_cluster.components import Component, ControlPlaneError

BLOCK = ipaddress.ip_network("10.192.0.0/12")
SLOT = 32  # addresses per run
POD_RANGE = ipaddress.ip_network("10.244.0.0/16")
BRIDGE = "cbr0"
INSIDE = "eth0"  # the namespace's end of the veth pair


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


class PodNetwork:
    """The namespace (held by a ``sleep`` of its own), its veth and bridge, for ``nodes``
    nodes. ``enter`` is the argv prefix that runs a command inside."""

    def __init__(self, directory: Path, nodes: int) -> None:
        if nodes > SLOT - 4:
            raise ControlPlaneError(f"at most {SLOT - 4} nodes per control plane, not {nodes}")
        self.directory, self.nodes = directory, nodes
        self.holder: Component | None = None
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
    def inside_ip(self) -> str:
        return self._at(2)

    def node_ip(self, index: int) -> str:
        return self._at(3 + index)

    @property
    def enter(self) -> list[str]:
        assert self.holder is not None and self.holder.pid is not None
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", "--"]

    # -- up and down --------------------------------------------------------------------------

    def up(self) -> PodNetwork:
        self.directory.mkdir(parents=True, exist_ok=True)
        holder = Component(
            "pod-network",
            ["unshare", "--net", "--", "sleep", "infinity"],
            self.directory / "pod-network.log",
            ready=lambda: _own_namespace(holder.pid),
        )
        self.holder = holder.start()
        try:
            self._pick_slot()
            self._wire()
        except BaseException:
            self.down()
            raise
        return self

    def _pick_slot(self) -> None:
        assert self.holder is not None and self.holder.pid is not None
        used, links = _used_addresses(), _links()
        slots = BLOCK.num_addresses // SLOT
        for step in range(slots):
            slot = (self.holder.pid + step) % slots
            base = BLOCK.network_address + slot * SLOT
            block = ipaddress.ip_network(f"{base}/27")
            if f"ajx{slot}" not in links and not any(a in block for a in used):
                self.base, self.link = base, f"ajx{slot}"
                return
        raise ControlPlaneError(f"no free /27 left in {BLOCK} for the pods' network")

    def _wire(self) -> None:
        assert self.holder is not None
        pid, inside = str(self.holder.pid), self.enter
        bridge = [f"ip addr add {pod_cidr(i)[1]}/24 dev {BRIDGE}" for i in range(self.nodes)]
        nodes = [f"ip addr add {self.node_ip(i)}/27 dev {INSIDE}" for i in range(self.nodes)]
        commands = [
            ["ip", "link", "add", self.link, "type", "veth", "peer", "name", INSIDE, "netns", pid],
            ["ip", "addr", "add", f"{self.host_ip}/27", "dev", self.link],
            ["ip", "link", "set", self.link, "up"],
            [*inside, "sh", "-ec", " && ".join([
                "ip link set lo up",
                f"ip addr add {self.inside_ip}/27 dev {INSIDE}",  # first: masquerade's source
                *nodes,
                f"ip link set {INSIDE} up",
                f"ip route add default via {self.host_ip}",
                f"ip link add {BRIDGE} type bridge",
                *bridge,
                f"ip link set {BRIDGE} up",
                "sysctl -qw net.ipv4.ip_forward=1",
                f"iptables -t nat -A POSTROUTING -s {POD_RANGE} -o {INSIDE} -j MASQUERADE",
            ])],
        ]  # fmt: skip
        for argv in commands:
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode:
                raise ControlPlaneError(
                    f"setting up the pods' network failed: {' '.join(argv)}: {done.stderr}"
                )

    def down(self) -> None:
        """Stop the holder; the namespace goes with the last process in it (and with it the
        veth pair, the bridge and every chain)."""
        if self.holder is not None:
            self.holder.stop()
            self.holder = None
        if self.link:
            subprocess.run(["ip", "link", "del", self.link], capture_output=True)
