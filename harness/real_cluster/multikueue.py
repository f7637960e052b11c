"""MultiKueue over real clusters: one manager and its workers, each a whole
:class:`ControlPlane` (etcd, kube-apiserver, its controllers, JobSet, Kueue, and real nodes), as
MultiKueue requires JobSet and Kueue on every cluster. A worker's nodes are the pool its quota
is for (``WORKER_POOLS``): two TPU hosts on ``worker-1``, two H100 hosts on ``worker-2``.

The manager gets what Kueue's MultiKueue setup documents: each worker's kubeconfig as a Secret
in Kueue's namespace (CA and token inline: Kueue refuses file paths), a ``MultiKueueCluster``
per worker, one ``MultiKueueConfig`` listing them in order, an ``AdmissionCheck`` of the
MultiKueue controller, and the ClusterQueue ``multikueue`` with that check and the LocalQueue
``multikueue`` in ``default``. Each worker has the same LocalQueue, behind a ClusterQueue with
its own quota: ``worker-1`` holds TPU quota only and ``worker-2`` GPU quota only, so where a
job runs is decided by what fits, with no race between the two (Kueue's default dispatcher
offers a job to every worker at once and keeps the first that admits it).
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

import yaml

from harness.real_cluster.control_plane import ControlPlane, stop_recorded
from harness.real_cluster.nodes import NODES, pools

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE = "multikueue"  # the LocalQueue (in default) and ClusterQueue, on every cluster
KUEUE_NAMESPACE = "kueue-system"
TPU, GPU = "google.com/tpu", "nvidia.com/gpu"
# Each worker's quota, by flavor: (its node labels, {resource: quota}).
WORKER_QUOTAS: dict[str, dict[str, tuple[dict[str, str], dict[str, int]]]] = {
    "worker-1": {
        "tpu-v5e": ({"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}, {TPU: 8})
    },
    "worker-2": {"h100": ({"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}, {GPU: 16})},
}


# Each worker's nodes: the pool of harness/real_cluster/nodes.py its quota is for.
WORKER_POOLS = {"worker-1": "tpu-v5e-a", "worker-2": "h100-pool"}


def worker_names(count: int) -> list[str]:
    return [f"worker-{i}" for i in range(1, count + 1)]


def start_workers(directory: Path, names: list[str]) -> dict[str, ControlPlane]:
    """A control plane per worker, under ``directory/<name>``; all stopped if one fails."""
    workers: dict[str, ControlPlane] = {}
    try:
        for name in names:
            nodes = tuple(pools(NODES)[WORKER_POOLS[name]]) if name in WORKER_POOLS else NODES
            workers[name] = ControlPlane(directory / name, nodes).up()
    except BaseException:
        for plane in workers.values():
            plane.down()
        raise
    return workers


def stop_workers(directory: Path) -> list[str]:
    """Stop every worker a ``directory`` records (``make cluster-down``)."""
    stopped = []
    for state in sorted(directory.glob("*/state.json")) if directory.exists() else ():
        stopped += [f"{state.parent.name}/{c}" for c in stop_recorded(state.parent)]
    if directory.exists():
        shutil.rmtree(directory, ignore_errors=True)
    return stopped


def inline_kubeconfig(plane: ControlPlane, identity: str = "admin") -> str:
    """``plane``'s kubeconfig for ``identity`` with its CA inline, as MultiKueue accepts one."""
    config = yaml.safe_load(plane.kubeconfig(identity).read_text())
    for cluster in config["clusters"]:
        ca = Path(cluster["cluster"].pop("certificate-authority")).read_bytes()
        cluster["cluster"]["certificate-authority-data"] = base64.b64encode(ca).decode()
    return yaml.safe_dump(config)


def _queues(
    flavors: dict[str, tuple[dict[str, str], dict[str, int]]], checks: list[str]
) -> list[dict[str, Any]]:
    """ResourceFlavors, the ClusterQueue and the LocalQueue ``multikueue`` for ``flavors``."""
    resources = sorted({r for _, quota in flavors.values() for r in quota})
    objects: list[dict[str, Any]] = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name},
         "spec": {"nodeLabels": labels} if labels else {}}
        for name, (labels, _) in flavors.items()
    ]  # fmt: skip
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": resources,
                "flavors": [
                    {
                        "name": name,
                        "resources": [
                            {"name": r, "nominalQuota": quota.get(r, 0)} for r in resources
                        ],
                    }
                    for name, (_, quota) in flavors.items()
                ],
            }
        ],
    }
    if checks:  # v1beta2 names them in admissionChecksStrategy
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    objects.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": QUEUE},
                    "spec": spec})  # fmt: skip
    objects.append({"apiVersion": KUEUE, "kind": "LocalQueue",
                    "metadata": {"name": QUEUE, "namespace": "default"},
                    "spec": {"clusterQueue": QUEUE}})  # fmt: skip
    return objects


def connect(manager: ControlPlane, workers: dict[str, ControlPlane]) -> None:
    """Make ``manager`` a MultiKueue manager of ``workers`` (in their order)."""
    for name, plane in workers.items():
        api = plane.api()
        for obj in _queues(WORKER_QUOTAS.get(name, {}), []):
            api.apply(obj)
    api = manager.api()
    objects: list[dict[str, Any]] = []
    for name, plane in workers.items():
        secret = f"{name}-kubeconfig"
        objects.append({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret, "namespace": KUEUE_NAMESPACE},
            "stringData": {"kubeconfig": inline_kubeconfig(plane)},
        })  # fmt: skip
        objects.append({
            "apiVersion": KUEUE, "kind": "MultiKueueCluster", "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                       "location": secret}}},
        })  # fmt: skip
    objects.append({"apiVersion": KUEUE, "kind": "MultiKueueConfig",
                    "metadata": {"name": QUEUE}, "spec": {"clusters": list(workers)}})  # fmt: skip
    objects.append({
        "apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": QUEUE},
        "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                 "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                "name": QUEUE}},
    })  # fmt: skip
    # The manager's own quota: the sum of the workers', in one flavor without node labels.
    total: dict[str, int] = {}
    for flavors in WORKER_QUOTAS.values():
        for _, quota in flavors.values():
            for resource, count in quota.items():
                total[resource] = total.get(resource, 0) + count
    objects += _queues({"default": ({}, total)}, [QUEUE])
    for obj in objects:
        api.apply(obj)

    def active() -> bool:
        path = "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/" + QUEUE
        conditions = (api.get(path).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Active" and c["status"] == "True" for c in conditions)

    api.wait_for("the MultiKueue admission check active (every worker connected)", active, 90)
