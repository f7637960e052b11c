"""The first process of a real node (its pid 1), in the node's own pid and mount namespaces
inside its own network (``harness/real_cluster/node.py`` starts it).

It makes the machine the node's processes see, then starts containerd, the device plugin,
the kubelet and kube-proxy, and reaps what is reparented to it (containerd's shims). When it ends, the
kernel kills every process of the node (the pid namespace's), and the node's mounts go with
its mount namespace: a node stopped (or killed) leaves nothing but its cgroups, which the
harness removes.

The node's view of the machine, private to it:

- ``/run`` is a fresh tmpfs: containerd's socket and its shims' sockets, runc's state and the
  pods' network namespaces are pinned there (containerd 1.6 puts shims' sockets under
  ``/run/containerd/s`` whatever its ``state`` says).
- ``/var/lib`` is an overlay whose changes land in the node's folder: the kubelet's device
  plugin socket is ``/var/lib/kubelet/device-plugins/kubelet.sock`` whatever its root dir, and
  the CNI plugins cache results in ``/var/lib/cni``.
- ``/var/log`` is the node's folder's ``var-log`` (the kubelet's ``/var/log/pods`` and
  ``/var/log/containers``).
- Its host name is the node's, and its ``/etc/hosts`` maps that name to the node's address,
  as a VM's does: a ``hostNetwork`` pod gets both, and a program that finds its own address
  from its host name (Gloo, in JAX's CPU collectives) finds the node's, not loopback.
- The six kernel settings the kubelet checks at start (``setupKernelTunables``: overcommit,
  panic on OOM and on oops, panic timeout, root's key quotas) read as the kubelet wants them:
  a file with that value is bound over each ``/proc/sys`` file. Left to itself the kubelet
  would write them, machine-wide (kernel.panic=10 on this shared machine); with
  ``protectKernelDefaults`` it refuses to start if one differs, so nothing is ever written.

    python -m harness.real_cluster.node_init NODE_JSON          run the node
    python -m harness.real_cluster.node_init --seed NODE_JSON   import its images and stop
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# What kubelet v1.36's setupKernelTunables wants (pkg/kubelet/cm/container_manager_linux.go).
KERNEL_TUNABLES = {
    "vm/overcommit_memory": 1,
    "vm/panic_on_oom": 0,
    "kernel/panic": 10,
    "kernel/panic_on_oops": 1,
    "kernel/keys/root_maxkeys": 1000000,
    "kernel/keys/root_maxbytes": 25000000,
}
SOCKET = "/run/containerd/containerd.sock"
# Where this runs: pid and mount namespaces of its own (its processes end with it, its mounts
# go with it); a running node adds a UTS namespace (``--uts``), for its host name.
UNSHARE = ("unshare", "--pid", "--fork", "--kill-child", "--mount", "--propagation", "private",
           "--mount-proc")  # fmt: skip
MACHINE_UTS = "AIRFLOW_JAX_MACHINE_UTS"  # the machine's UTS namespace, which a node never names


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} node: {message}", flush=True)


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True)


def make_machine(folder: Path, config: dict[str, Any] | None) -> None:
    """The node's mounts and name (see the module's doc); ``config`` None: only ``/run``."""
    sh("mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/run")
    if config is None:
        return
    if os.readlink("/proc/self/ns/uts") == os.environ.get(MACHINE_UTS):
        sys.exit("not in a UTS namespace of its own: naming the node would rename the machine")
    sh("hostname", config["hostname"])
    hosts = folder / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n{config['ip']} {config['hostname']}\n")
    sh("mount", "--bind", "-o", "ro", str(hosts), "/etc/hosts")
    upper, work = folder / "var-lib" / "upper", folder / "var-lib" / "work"
    for path in (upper, work, folder / "var-log", folder / "sysctl"):
        path.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "overlay", "overlay", "-o",
       f"lowerdir=/var/lib,upperdir={upper},workdir={work}", "/var/lib")  # fmt: skip
    sh("mount", "--bind", str(folder / "var-log"), "/var/log")
    for name, value in KERNEL_TUNABLES.items():
        shown = folder / "sysctl" / name.replace("/", ".")
        shown.write_text(f"{value}\n")
        sh("mount", "--bind", "-o", "ro", str(shown), f"/proc/sys/{name}")


def seed_root(seed: Path, root: Path) -> None:
    """Start from the cache's containerd root where the images are already imported: its
    files hard-linked (layers and blobs are never written in place), its databases copied
    (containerd writes those)."""
    sh("cp", "-a", "--link", f"{seed}/.", str(root))
    for db in root.rglob("*.db"):
        copy = db.with_name(db.name + ".copy")
        shutil.copy2(db, copy)
        copy.replace(db)


class Node:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.folder = Path(config["directory"])
        self.children: dict[int, str] = {}

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        out = (self.folder / "logs" / f"{name}.log").open("ab")
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)  # fmt: skip
        self.children[child.pid] = name
        log(f"{name} started (pid {child.pid})")
        return child

    def containerd(self) -> None:
        self.start(
            "containerd", [self.config["containerd"], "--config", self.config["containerd_config"]]
        )
        deadline = time.monotonic() + 60
        while not os.path.exists(SOCKET):
            if time.monotonic() > deadline:
                sys.exit("containerd did not listen within 60 s")
            self.reap(block=False)
            time.sleep(0.05)
        ctr = ["ctr", "--address", SOCKET, "--namespace", "k8s.io"]
        while subprocess.run([*ctr, "version"], capture_output=True).returncode:
            time.sleep(0.1)

    def import_images(self) -> None:
        ctr = ["ctr", "--address", SOCKET, "--namespace", "k8s.io"]
        for archive in self.config["archives"]:
            started = time.monotonic()
            sh(*ctr, "images", "import", "--snapshotter", "overlayfs", archive)
            log(f"imported {Path(archive).name} in {time.monotonic() - started:.1f} s")

    def reap(self, block: bool) -> tuple[int, str] | None:
        """Reap one child (ours, or one reparented to us); ours by name."""
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            if block:
                time.sleep(0.5)
            return None
        if pid == 0:
            return None
        name = self.children.pop(pid, "")
        if name:
            log(f"{name} exited ({os.waitstatus_to_exitcode(status)})")
            return pid, name
        return None

    def link_seed(self) -> None:
        """Start from the seed's containerd root (``seed`` in the config), if there is one."""
        root = Path(self.config["containerd_root"])
        seed = self.config.get("seed")
        if seed and not root.exists():
            started = time.monotonic()
            seed_root(Path(seed), root)
            log(f"containerd root linked from {seed} in {time.monotonic() - started:.1f} s")

    def run(self) -> None:
        self.link_seed()
        self.containerd()
        self.import_images()  # what the seed lacks: all where the cache cannot be linked
        if plugin := self.config.get("device_plugin"):
            self.start("device-plugin", plugin)
        self.start("kubelet", self.config["kubelet"])
        self.start("kube-proxy", self.config["kube_proxy"])
        while True:  # a node whose kubelet or containerd died is a broken machine: it ends
            if (ended := self.reap(block=True)) and ended[1] in ("kubelet", "containerd"):
                sys.exit(f"{ended[1]} exited: the node stops")

    def seed(self) -> None:
        """Import the images into a fresh root (or one linked from an older seed), stop
        containerd cleanly, and end."""
        self.link_seed()
        self.containerd()
        self.import_images()
        for pid in list(self.children):
            os.kill(pid, signal.SIGTERM)
        while self.children:
            self.reap(block=True)


def main(argv: list[str]) -> int:
    seeding = argv[0] == "--seed"
    config = json.loads(Path(argv[-1]).read_text())
    folder = Path(config["directory"])
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the kernel then kills the rest
    make_machine(folder, None if seeding else config)
    node = Node(config)
    node.seed() if seeding else node.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
