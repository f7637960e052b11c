"""What a job's pod sees on a real node: it is its container's first process, on a node of the
pool it asked for (its host name, in ``hostNetwork``), with as many JAX devices as it asked for
chips (the device plugin's allocation), the API server through the ``kubernetes`` Service
(kube-proxy) with its service account's token, and cluster names from CoreDNS, which answers
nothing outside the cluster (no upstream)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client, config

from harness.real_cluster.build import versions
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.nodes import NODES
from tests.support.real_cluster_fixtures import MACHINE_HOSTNAME
from tests.support.real_cluster_jobs import logger, run
from tests.support.real_cluster_pods import program

K8S_ROUTE = "jax-k8s-cluster"  # the service account, Role and binding of JAX's own route


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


@pytest.fixture
def k8s_route_account(real_k8s: ControlPlane) -> Iterator[Callable[[], None]]:
    """A service account for pods that take JAX's own route, and a call that grants it what
    ``K8sCluster`` reads (its pod, listed by IP; its Job); all removed after the test."""
    api = config.new_client_from_config(str(real_k8s.kubeconfig()))
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    meta = client.V1ObjectMeta(name=K8S_ROUTE)
    core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=meta))

    def grant() -> None:
        rules = [
            client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["list"]),
            client.V1PolicyRule(api_groups=["batch"], resources=["jobs"], verbs=["get"]),
        ]
        rbac.create_namespaced_role("default", client.V1Role(metadata=meta, rules=rules))
        subject = client.RbacV1Subject(kind="ServiceAccount", name=K8S_ROUTE, namespace="default")
        role = client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name=K8S_ROUTE)
        binding = client.V1RoleBinding(metadata=meta, subjects=[subject], role_ref=role)
        rbac.create_namespaced_role_binding("default", binding)

    yield grant
    with contextlib.suppress(client.ApiException):  # not granted: the test failed first
        rbac.delete_namespaced_role_binding(K8S_ROUTE, "default")
        rbac.delete_namespaced_role(K8S_ROUTE, "default")
    core.delete_namespaced_service_account(K8S_ROUTE, "default")


def test_jaxs_own_kubernetes_route_needs_a_role_and_counts_one_slice(
    real_k8s: ControlPlane, k8s_route_account: Callable[[], None], tmp_path
):
    """JAX's ``K8sCluster`` on real nodes, with the pods' mounted token: besides the
    ``kubernetes`` package in the image (``jax[k8s]``), it needs the pods' service account to
    list pods and get Jobs (without, the job fails with JAX's 403); with them, each process
    finds its pod by its IP and its Job, but a Job is one slice: a 2-slice job becomes two JAX
    clusters of two processes, each with its slice's pod 0 as coordinator. Why the provider
    registers its own environment, from the JobSet's values, first."""
    command = ["python3", program("tests/fixtures/programs/k8s_cluster_initialize.py"),
               str(tmp_path)]  # fmt: skip
    log, _ = logger("k8s-route-denied")
    thread, out = run("k8s-route-denied", log, command=command, service_account_name=K8S_ROUTE,
                      shared=tmp_path)  # fmt: skip
    thread.join(240)
    assert "Kubernetes API Error: 403" in str(out["value"]), out["value"]
    k8s_route_account()
    log, _ = logger("k8s-route")
    thread, out = run("k8s-route", log, num_slices=2, command=command,
                      service_account_name=K8S_ROUTE, shared=tmp_path)  # fmt: skip
    thread.join(240)
    assert not isinstance(out["value"], BaseException), out["value"]
    seen = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    clusters: dict[str, list[tuple[int, int]]] = {}
    for each in seen:
        clusters.setdefault(each["coordinator"], []).append(
            (each["process_index"], each["process_count"])
        )
    assert len(seen) == 4, seen
    assert [sorted(c) for c in clusters.values()] == [[(0, 2), (1, 2)]] * 2, clusters
