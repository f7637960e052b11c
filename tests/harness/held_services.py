"""Not collected by the suite (no ``test_`` prefix): the run that ``test_reaper.py`` starts and
kills. It holds the real cluster and PostgreSQL, runs a pod on a node (its container a
process of this machine, under the node's containerd shim), says what they are (their pids,
the container's and its shim's, the cluster's folder, cgroup and network link), then waits to
be killed."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from kubernetes import client, config

from harness.real_cluster.images import RUNTIME_IMAGE

PIDS_FILE = "AIRFLOW_JAX_HELD_PIDS"


def with_marker(marker: str) -> list[int]:
    """The processes of this machine whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_hold_the_services_until_killed(real_cluster, postgres):
    marker = f"held-{uuid.uuid4().hex}"
    core = client.CoreV1Api(config.new_client_from_config(str(real_cluster.kubeconfig())))
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held", "namespace": "default"},
        "spec": {
            "nodeSelector": {"cloud.google.com/gke-nodepool": "h100-pool"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "containers": [{"name": "held", "image": RUNTIME_IMAGE, "imagePullPolicy": "Never",
                            "command": ["python3", "-c", "import time; time.sleep(1e9)",
                                        marker]}],
        },
    })  # fmt: skip
    deadline = time.monotonic() + 120
    while not (container := with_marker(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert container, "the held pod's container never ran"
    shim = int(Path(f"/proc/{container[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
    every = [*real_cluster.components, *real_cluster.cluster.components]
    held = {
        "pids": [c.pid for c in every if c.pid is not None] + [postgres.pid],
        "container": container[0],
        "shim": shim,
        "marker": marker,
        "directory": str(real_cluster.directory),
        "cgroup": real_cluster.cluster.cgroup,
        "link": real_cluster.cluster.network.link,
    }
    Path(os.environ[PIDS_FILE]).write_text(json.dumps(held))
    time.sleep(600)
