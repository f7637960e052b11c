"""GPUDirect networking for multi-node GPU pods, by machine type. Pure data, no I/O.

Without it NCCL falls back to TCP on eth0 and multi-node collectives crawl. The pod shape
matches what Google's launcher (xpk) gives each stack: the multi-network annotations, the
receive-data-path daemon as a native sidecar (TCPX, TCPXO), the NCCL plugin's host paths,
``/dev/shm`` in memory, and the env the plugin reads. The node pools need GKE multi-networking
and the NCCL plugin installed (docs/gke-prerequisites.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from airflow_provider_jax.manifest.accelerators.model import GpuDirect

# gpu_networking: the machine type's GPUDirect networking, or plain pods.
GpuNetworking = Literal["auto", "none"]
GPU_NETWORKING: tuple[GpuNetworking, ...] = get_args(GpuNetworking)
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
# The networks GKE's GPUDirect guides create; a cluster's own names go in gpu_networks=.
DEFAULT_NETWORKS: Mapping[GpuDirect, tuple[str, ...]] = {
    "tcpx": ("default", "vpc1", "vpc2", "vpc3", "vpc4"),
    "tcpxo": ("default", *(f"vpc{i}" for i in range(1, 9))),
    "rdma": ("default", "gvnic-1", *(f"rdma-{i}" for i in range(8))),
}
_DAEMON_IMAGES = {
    "tcpx": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.11",
    "tcpxo": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.12",
}
_NVIDIA_DEVICES = [f"/dev/nvidia{i}" for i in range(8)] + ["/dev/nvidiactl", "/dev/nvidia-uvm"]
USER_WORKLOAD_TOLERATION = {
    "key": "user-workload",
    "operator": "Equal",
    "value": "true",
    "effect": "NoSchedule",
}
#: The env the stacks set that names paths of a GKE GPU node; a local run keeps its own.
NODE_ENV: Mapping[str, str] = {
    "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64",
    "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
}
_LD_PATH = {"name": "LD_LIBRARY_PATH", "value": NODE_ENV["LD_LIBRARY_PATH"]}


def _host(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path}}


def _mount(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "mountPath": path}


def _shm(size_limit: str | None) -> dict[str, Any]:
    empty_dir: dict[str, str] = {"medium": "Memory"}
    if size_limit:
        empty_dir["sizeLimit"] = size_limit
    return {"name": "dshm", "emptyDir": empty_dir}


def _daemon(stack: GpuDirect) -> dict[str, Any]:
    """The receive-data-path manager, a native sidecar (init container, restartPolicy
    Always) so it outlives nothing: it stops when the JAX container ends."""
    if stack == "tcpx":
        command = [
            "/tcpgpudmarxd/build/app/tcpgpudmarxd",
            *("--gpu_nic_preset", "a3vm", "--gpu_shmem_type", "fd", "--uds_path", "/run/tcpx"),
            *("--setup_param", '"--verbose 128 2 0 "'),
        ]
        extra: dict[str, Any] = {"command": command}
        caps = ["NET_ADMIN"]
        mounts = [
            _mount("libraries", "/usr/local/nvidia/lib64"),
            _mount("tcpx-socket", "/run/tcpx"),
        ]
    else:
        run = (
            "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
            "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr"
        )
        extra = {"command": ["/bin/sh", "-c"], "args": [run]}
        caps = ["NET_ADMIN", "NET_BIND_SERVICE"]
        mounts = [_mount("libraries", "/usr/local/nvidia")]
    return {
        "name": f"{stack}-daemon",
        "image": _DAEMON_IMAGES[stack],
        "imagePullPolicy": "Always",
        "restartPolicy": "Always",
        **extra,
        "securityContext": {"capabilities": {"add": caps}},
        "volumeMounts": [
            *mounts,
            _mount("sys", "/hostsysfs"),
            _mount("proc-sys", "/hostprocsysfs"),
        ],
        "env": [dict(_LD_PATH)],
    }


def decorations(stack: GpuDirect, networks: Sequence[str] | None = None) -> dict[str, Any]:
    """What ``stack`` adds to the pod: ``annotations``, ``volumes``, ``init_containers``,
    ``tolerations``, and for the JAX container ``env`` and ``volume_mounts``."""
    nets = list(networks or DEFAULT_NETWORKS[stack])
    interfaces = [{"interfaceName": f"eth{i}", "network": n} for i, n in enumerate(nets)]
    annotations = {
        DEFAULT_INTERFACE_ANNOTATION: "eth0",
        INTERFACES_ANNOTATION: json.dumps(interfaces),
    }
    env = [dict(_LD_PATH)]
    if stack == "tcpx":
        devices = _NVIDIA_DEVICES
        volumes = [
            _host("libraries", "/home/kubernetes/bin/nvidia/lib64"),
            _host("sys", "/sys"),
            _host("proc-sys", "/proc/sys"),
            _host("tcpx-socket", "/run/tcpx"),
            _shm("128Gi"),
        ]
        mounts = [
            _mount("tcpx-socket", "/tmp"),
            _mount("libraries", "/usr/local/nvidia/lib64"),
            _mount("dshm", "/dev/shm"),
        ]
    elif stack == "tcpxo":
        devices = [*_NVIDIA_DEVICES, "/dev/dmabuf_import_helper"]
        volumes = [
            _host("libraries", "/home/kubernetes/bin/nvidia"),
            _host("sys", "/sys"),
            _host("proc-sys", "/proc/sys"),
            _host("aperture-devices", "/dev/aperture_devices"),
            _shm("128Gi"),
        ]
        fastrak = "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"
        env.append({"name": fastrak, "value": NODE_ENV[fastrak]})
        mounts = [
            _mount("aperture-devices", "/dev/aperture_devices"),
            _mount("libraries", "/usr/local/nvidia"),
            _mount("dshm", "/dev/shm"),
        ]
    else:  # rdma: the NICs are RDMA devices the plugin reaches itself; no daemon
        devices = []
        volumes = [
            _host("library-dir-host", "/home/kubernetes/bin/nvidia"),
            _host("gib", "/home/kubernetes/bin/gib"),
            _shm(None),
        ]
        mounts = [
            _mount("library-dir-host", "/usr/local/nvidia"),
            _mount("gib", "/usr/local/gib"),
            _mount("dshm", "/dev/shm"),
        ]
    if devices:
        annotations[f"devices.gke.io/container.{stack}-daemon"] = "".join(
            f"- path: {d}\n" for d in devices
        )
    return {
        "annotations": annotations,
        "volumes": volumes,
        "init_containers": [_daemon(stack)] if devices else [],
        "tolerations": [dict(USER_WORKLOAD_TOLERATION)],
        "env": env,
        "volume_mounts": mounts,
    }
