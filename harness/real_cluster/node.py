"""A real node: a kubelet (v1.36, built from the pinned module) with a containerd of its own
(Debian's 1.6), runc, the CNI bridge plugin, kube-proxy and the accelerator's device plugin,
all in the node's own pid, mount and UTS namespaces (``node_init.py``) inside its own network
namespace on the nodes' LAN (``pod_network.py``).

What had to be set, each for a reason found by running it:

- ``failCgroupV1: false``: kubelet 1.36 refuses cgroup v1 otherwise (this machine has v1).
- ``cgroupDriver: cgroupfs``: containerd 1.6 lacks the CRI ``RuntimeConfig`` call the kubelet
  would read the driver from; and a ``cgroupRoot`` per node (``cgroups.py``).
- containerd's ``restrict_oom_score_adj``: root here lacks ``CAP_SYS_RESOURCE``, so runc cannot
  set a negative ``oom_score_adj``; the kubelet's own ``oomScoreAdj`` is 0 likewise.
- ``protectKernelDefaults`` with the kernel settings it checks shown as it wants them
  (``node_init.py``): the kubelet never writes the machine's sysctls.
- ``imageGCHighThresholdPercent: 100``: no image here can be pulled again once removed.
- The kubelet serves on the node's own address with a certificate from the cluster's CA
  (the API server checks it), and authenticates to the API server as ``system:node:<name>``
  (the Node authorizer and ``NodeRestriction`` admission apply).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.real_cluster import cgroups
from harness.real_cluster.build import REPO
from harness.real_cluster.cluster_services import CLUSTER_DNS, kube_proxy_argv
from harness.real_cluster.components import Component
from harness.real_cluster.images import PAUSE_IMAGE, Images
from harness.real_cluster.node_init import MACHINE_UTS, UNSHARE
from harness.real_cluster.nodes import Node
from harness.real_cluster.pod_network import PodNetwork, pod_cidr

CONTAINERD_SOCKET = "/run/containerd/containerd.sock"  # in the node's own /run
CNI_BIN = "/usr/lib/cni"  # Debian's containernetworking-plugins
# Beta and on by default in 1.36; named so a reader need not know (JobSet's in-place restarts).
KUBELET_GATES = ("ContainerRestartRules", "RestartAllContainersOnContainerExits")

CONTAINERD_CONFIG = """\
version = 2
root = "{{root}}"
state = "/run/containerd"
oom_score = 0
# Plugins that would write outside the node's folders, or that nothing here uses.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{socket}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"""


def containerd_config(cni_conf: Path) -> str:
    """A node's containerd config, with ``{root}`` left to fill."""
    return CONTAINERD_CONFIG.format(
        socket=CONTAINERD_SOCKET, pause=PAUSE_IMAGE, cni_bin=CNI_BIN, cni_conf=cni_conf
    )


class RealNode:
    """One node of a control plane: ``spawn`` starts it, ``ready`` says when the kubelet has
    registered it Ready with its accelerator, ``stop`` is the machine going away."""

    def __init__(
        self,
        node: Node,
        index: int,
        directory: Path,
        *,
        network: PodNetwork,
        kubeconfig: Path,
        proxy_kubeconfig: Path,
        tls: tuple[Path, Path],
        ca: Path,
        cgroup_parent: str,
        binaries: dict[str, Path],
        images: Images,
    ) -> None:
        self.node, self.index, self.directory = node, index, directory
        self.network, self.kubeconfig, self.tls, self.ca = network, kubeconfig, tls, ca
        self.proxy_kubeconfig = proxy_kubeconfig
        self.cgroup = f"{cgroup_parent}/{node.name}"
        self.binaries, self.images = binaries, images
        self.component: Component | None = None

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def ip(self) -> str:
        return self.network.node_ip(self.index)

    @property
    def log(self) -> Path:
        return self.directory / "logs" / "kubelet.log"

    # -- its files ----------------------------------------------------------------------------

    def _cni(self) -> Path:
        folder = self.directory / "cni"
        folder.mkdir(parents=True, exist_ok=True)
        cidr = pod_cidr(self.index)
        config = {
            "cniVersion": "1.0.0",
            "name": "pods",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cbr0",
                    "isGateway": True,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": str(cidr), "gateway": str(cidr[1])}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.directory / "cni-ipam"),
                    },
                }
            ],
        }
        (folder / "10-pods.conflist").write_text(json.dumps(config, indent=1))
        return folder

    def _kubelet_config(self) -> Path:
        cert, key = self.tls
        config: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup,
            "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCKET}",
            "address": self.ip,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzPort": 0,
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.ca)},
            },
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": str(cert),
            "tlsPrivateKeyFile": str(key),
            "clusterDNS": [CLUSTER_DNS],
            "clusterDomain": "cluster.local",
            "resolvConf": "",  # the machine's resolvers are not the pods': no upstream
            "registerWithTaints": self.node.taints,
            "protectKernelDefaults": True,
            "oomScoreAdj": 0,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
            "shutdownGracePeriod": "0s",
            "featureGates": {gate: True for gate in KUBELET_GATES},
        }  # fmt: skip
        path = self.directory / "kubelet.yaml"
        path.write_text(yaml.safe_dump(config))
        return path

    def _launch_config(self) -> Path:
        containerd_toml = self.directory / "containerd.toml"
        root = self.directory / "containerd-root"
        containerd_toml.write_text(containerd_config(self._cni()).format(root=root))
        labels = ",".join(f"{k}={v}" for k, v in self.node.labels.items())
        kubelet = [
            str(self.binaries["kubelet"]),
            f"--config={self._kubelet_config()}",
            f"--kubeconfig={self.kubeconfig}",
            f"--hostname-override={self.name}",
            f"--node-ip={self.ip}",
            f"--node-labels={labels}",
            # Its default root, /var/lib/kubelet: in the node's /var/lib overlay (its folder's
            # var-lib/upper), and short enough for the unix sockets it makes there.
            "--v=1",
        ]
        plugin = None
        if accelerator := self.node.accelerator:
            resource, count = accelerator
            plugin = [str(self.binaries["device-plugin"]), f"--resource={resource}",
                      f"--count={count}"]  # fmt: skip
        config = {
            "directory": str(self.directory),
            "hostname": self.name,
            "ip": self.ip,
            "containerd": shutil.which("containerd") or "containerd",
            "containerd_config": str(containerd_toml),
            "containerd_root": str(root),
            "archives": [str(p) for p in self.images.to_import()],
            "seed": str(self.images.seed) if self.images.seed else None,
            "kubelet": kubelet,
            "device_plugin": plugin,
            "kube_proxy": kube_proxy_argv(
                self.binaries["kube-proxy"], self.proxy_kubeconfig, self.name, self.ip
            ),
        }
        path = self.directory / "node.json"
        path.write_text(json.dumps(config, indent=1))
        return path

    # -- its life -----------------------------------------------------------------------------

    def spawn(self, ready: Any) -> Component:
        """Start the node (a fresh machine: its containerd root and pods' state from scratch);
        ``ready()`` says when the API server shows it Ready."""
        self.stop()
        clean_node_folder(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        cgroups.create(self.cgroup)
        launch = self._launch_config()
        self.component = Component(
            f"node {self.name}",
            [
                *self.network.enter_node(self.index),
                *UNSHARE,
                "--uts",  # its own host name (node_init sets it), never the machine's
                "--",
                sys.executable,
                "-m",
                "harness.real_cluster.node_init",
                str(launch),
            ],
            self.directory / "logs" / "node.log",
            ready,
            env={"PYTHONPATH": str(REPO), MACHINE_UTS: os.readlink("/proc/self/ns/uts")},
            cwd=REPO,
            # Its seed is not pruned while it runs, even after the run that started it
            # (`make cluster`) has ended.
            pass_fds=self.images.inherited(),
        ).spawn()
        return self.component

    def stop(self, grace: float = 10.0) -> None:
        """The machine goes: every process of the node ends (its pid namespace's), its mounts
        with its mount namespace, and its cgroups are removed."""
        if self.component is not None:
            self.component.stop(grace)
            self.component = None
            cgroups.remove(self.cgroup)

    def clean(self) -> None:
        """Remove what the stopped node kept on disk (its containerd root, the kubelet's state):
        its logs stay."""
        clean_node_folder(self.directory)

    def kill(self) -> None:
        """The machine goes at once (a VM preempted): no process gets a grace period."""
        self.stop(grace=0)


def clean_node_folder(folder: Path) -> None:
    """A node's state on disk, all but its logs: its containerd root (a gigabyte of image
    layers, hard links to the seed's), its kubelet's (``/var/lib`` overlay), its pods' IPs."""
    for state in ("containerd-root", "var-lib", "cni-ipam"):
        shutil.rmtree(folder / state, ignore_errors=True)
