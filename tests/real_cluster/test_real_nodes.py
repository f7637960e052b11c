"""What a job's pod sees on a real node: it is its container's first process, on a node of the
pool it asked for (its host name, in ``hostNetwork``), with as many JAX devices as it asked for
chips (the device plugin's allocation), the API server through the ``kubernetes`` Service
(kube-proxy) with its service account's token, and cluster names from CoreDNS, which answers
nothing outside the cluster (no upstream)."""

from __future__ import annotations

import socket

from harness.real_cluster.build import versions
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.nodes import NODES
from tests.support.real_cluster_fixtures import MACHINE_HOSTNAME
from tests.support.real_cluster_jobs import logger, run


def test_a_pod_sees_its_node_its_chips_the_api_and_cluster_dns_only(real_k8s: ControlPlane):
    log, _ = logger("node-view")
    thread, out = run("node-view", log, entrypoint="node_view:what_a_pod_sees")
    thread.join(240)
    seen = out["value"]
    assert not isinstance(seen, BaseException), seen
    view = seen.result
    assert view["pid"] == 1, view  # the container's own pid namespace
    assert view["hostname"].startswith("gke-tpu-v5e-"), view  # hostNetwork: the node's name
    assert (view["devices"], view["platform"], view["processes"]) == (4, "cpu", 2), view
    assert view["api_through_the_service"] == versions()["KUBERNETES_VERSION"], view
    assert view["kubernetes_service"] == "10.0.0.1", view
    assert view["outside_name"] == "gaierror", view


def test_the_nodes_name_themselves_never_the_machine(real_cluster: ControlPlane):
    """Each node's host name is set in its own UTS namespace: the machine's stays as it was
    (a node that set it for the machine broke Gloo for every other process here)."""
    assert socket.gethostname() == MACHINE_HOSTNAME
    assert MACHINE_HOSTNAME not in {n.name for n in NODES}
