"""``placement=`` on the real nodes: Kueue's Topology Aware Scheduling with the objects
docs/capacity.md gives a platform team (GKE's default Topology levels, a flavor on the A3
pool, a queue), real Kueue assigning the domain, and kube-scheduler placing each pod on the
node Kueue picked. The two H100 nodes are in one block, each in a subblock of its own
(``harness/real_cluster/nodes.py``): a two-node job fits ``required:block``, and waits with
``required:subblock``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from airflow_provider_jax.operators import JaxGpuJobOperator
from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.nodes import NODES
from tests.support.docs_kueue import apply, delete, page_objects
from tests.support.real_cluster_jobs import logger, run

H100_HOSTS = sorted(n.name for n in NODES if n.pool == "h100-pool")
GPU_JOB = {
    "operator": JaxGpuJobOperator, "accelerator": "h100", "gpus_per_node": 8, "num_nodes": 2,
    "gpu_networking": "none", "queue_name": "gpu-tas",
    "entrypoint": "tests.support.programs:hello", "initialize_distributed": False,
}  # fmt: skip


@pytest.fixture(scope="module")
def gpu_tas_queue(real_cluster: ControlPlane) -> Iterator[None]:
    api = client.CustomObjectsApi(config.new_client_from_config(str(real_cluster.kubeconfig())))
    objects = page_objects("capacity.md", "Placement")
    assert [o["kind"] for o in objects] == ["Topology", "ResourceFlavor", "ClusterQueue",
                                            "LocalQueue"]  # fmt: skip
    apply(api, objects)
    yield
    delete(api, objects)


def _pods(plane: ControlPlane, task: str) -> list[dict[str, Any]]:
    items = plane.api().get("/api/v1/namespaces/default/pods")["items"]
    name = "jobset.sigs.k8s.io/jobset-name"
    return [p for p in items if p["metadata"]["labels"].get(name, "").startswith(f"{task}-")]


def test_required_block_runs_the_nodes_where_kueue_assigned_them(gpu_tas_queue, real_k8s):
    log, lines = logger("in-one-block")
    thread, out = run(
        "in-one-block", log, placement="required:block", on_finish_action="keep_jobset",
        **GPU_JOB,
    )  # fmt: skip
    lines.wait_for("Queue: admitted by Kueue (ClusterQueue gpu-tas) on flavor h100-tas")
    thread.join(240)
    outcome = out["value"]
    assert not isinstance(outcome, BaseException), outcome
    assert outcome.result == "ok"
    # Kueue read the annotation (a queue whose only flavor has a topology would place a job
    # without one too, preferring the lowest level).
    listed = real_k8s.api().get("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads")
    ours = "jobset-in-one-block-"  # Kueue's name: jobset-<JobSet's name>-<hash>
    (workload,) = [w for w in listed["items"] if w["metadata"]["name"].startswith(ours)]
    (podset,) = workload["spec"]["podSets"]
    assert podset["topologyRequest"]["required"] == "cloud.google.com/gce-topology-block", podset
    pods = _pods(real_k8s, "in-one-block")
    assert sorted(p["spec"]["nodeName"] for p in pods) == H100_HOSTS, pods
    for pod in pods:
        # Kueue's: the pod was gated until it had its node, then pinned to it.
        assert pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] == pod["spec"]["nodeName"]
        assert not pod["spec"].get("schedulingGates"), pod["spec"]


def test_required_subblock_waits_with_kueues_reason_and_fails_at_queue_timeout(
    gpu_tas_queue, real_k8s
):
    """Each subblock holds one node (8 GPUs) of the 16 the job needs: no pod is created."""
    log, lines = logger("in-one-subblock")
    thread, out = run(
        "in-one-subblock", log, placement="required:subblock", queue_timeout=30, **GPU_JOB
    )
    said = lines.wait_for("Queue: waiting: couldn't assign flavors", timeout=60)
    assert "topology" in said, said
    thread.join(120)
    failure = out["value"]
    assert isinstance(failure, BaseException), failure
    assert "queue_timeout (30s)" in str(failure), str(failure)
    assert not _pods(real_k8s, "in-one-subblock")
