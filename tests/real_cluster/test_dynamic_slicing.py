"""Ironwood dynamic slicing on the real control plane: the platform team's objects of
docs/ironwood.md applied to the real Kueue as written, 16 nodes labelled as one 4x4x4 cube of
a tpu7x pool (harness/real_cluster/nodes.py), and the slice controller's admission check
played by a STAND-IN (harness/real_cluster/slice_controller.py: GKE's controller cannot be
built here). Kueue's topology-aware admission carves a sub-slice in one partition of its
shape and a super-slice out of the whole cube, and kube-scheduler places the pods where Kueue
says; each runs to the leader's result, and nothing is left behind.

The cube's 16 nodes are a STAND-IN kubelet's (harness/real_cluster/kubelet.py), whose pods are
processes on this machine: 16 real nodes (a kubelet, containerd and kube-proxy each, and 16 JAX
processes at once) do not fit a 2-core machine beside the cluster's own six."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from harness.real_cluster.control_plane import ControlPlane
from harness.real_cluster.slice_controller import GROUP, PLURAL, VERSION, SliceController
from tests.support.docs_kueue import PLURALS, apply, delete, page_objects
from tests.support.real_cluster_jobs import logger, run
from tests.support.waiting import eventually

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"


@pytest.fixture(scope="module")
def stand_in_cube(real_cluster: ControlPlane) -> Iterator[None]:
    kubelet = real_cluster.start_stand_in_kubelet()
    yield
    real_cluster.stop_stand_in_kubelet(kubelet)


@pytest.fixture(scope="module")
def tpu7x_queue(
    real_cluster: ControlPlane, stand_in_cube: None
) -> Iterator[client.CustomObjectsApi]:
    api_client = config.new_client_from_config(str(real_cluster.kubeconfig()))
    api = client.CustomObjectsApi(api_client)
    controller = SliceController(real_cluster.kubeconfig())
    controller.install()
    objects = page_objects("ironwood.md")
    assert [o["kind"] for o in objects] == list(PLURALS)
    apply(api, objects)
    controller.start()
    yield api
    controller.stop()
    delete(api, objects)
    assert not controller.errors, controller.errors


def _bound_pods(core: client.CoreV1Api, task: str, count: int) -> list[client.V1Pod]:
    """The job's pods once all ``count`` run (its JobSet is named after the task)."""
    pods = core.list_namespaced_pod("default", label_selector=JOBSET_NAME).items
    ours = [p for p in pods if p.metadata.labels[JOBSET_NAME].startswith(f"{task}-")]
    bound = [p for p in ours if p.spec.node_name and p.status.phase == "Running"]
    return bound if len(bound) == count else []


def _slices(api: client.CustomObjectsApi) -> list[dict[str, Any]]:
    return api.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["items"]


def _carve(
    api: client.CustomObjectsApi,
    real_k8s: ControlPlane,
    tmp_path: Path,
    name: str,
    accelerator: str,
    hosts: int,
    **kwargs: Any,
) -> tuple[list[dict[str, str]], list[dict[str, Any]], dict[str, Any]]:
    """Run one dynamically sliced job to its result: (the labels of the nodes its pods ran
    on, the Slices made for it, the leader's result)."""
    core = client.CoreV1Api(config.new_client_from_config(str(real_k8s.kubeconfig())))
    gate = tmp_path / "gate"
    log, lines = logger(name)
    thread, out = run(
        name, log, accelerator=accelerator, dynamic_slicing=True, queue_name="tpu7x",
        entrypoint_kwargs={"gate": str(gate)}, **kwargs,
    )  # fmt: skip
    lines.wait_for("Queue: admitted by Kueue", timeout=120)
    pods = eventually(f"{hosts} pods running", lambda: _bound_pods(core, name, hosts), 180)
    nodes = [core.read_node(p.spec.node_name).metadata.labels for p in pods]
    slices = _slices(api)  # Kueue names the Workload jobset-<name>-<hash>; its Slices after it
    jobset = pods[0].metadata.labels[JOBSET_NAME]
    assert all(s["metadata"]["name"].startswith(f"jobset-{jobset}-") for s in slices), slices
    gate.touch()
    thread.join(240)
    outcome = out["value"]
    assert not isinstance(outcome, BaseException), outcome
    # Nothing left: the JobSet is deleted at the end, its Workload with it, and the Slices
    # with their Workload (owner references, the real garbage collector).
    eventually("no Slice left", lambda: not _slices(api), 120)
    return nodes, slices, outcome.result


def test_a_sub_slice_is_carved_in_one_partition_of_its_shape(tpu7x_queue, real_k8s, tmp_path):
    nodes, slices, result = _carve(
        tpu7x_queue, real_k8s, tmp_path, "sub-slice", "tpu7x-2x2x2", 2,
        entrypoint="gated_train:hold_until",
    )  # fmt: skip
    assert result["processes"] == 2  # real jax.distributed over the two hosts
    partition = {n["cloud.google.com/gke-tpu-partition-2x2x2-id"] for n in nodes}
    assert len(partition) == 1 and len({n["kubernetes.io/hostname"] for n in nodes}) == 2
    assert [s["spec"] for s in slices] == [
        {"type": "tpu7x", "topology": "2x2x2", "partitionIds": sorted(partition)}
    ]


def test_a_super_slice_is_carved_out_of_whole_cubes(tpu7x_queue, real_k8s, tmp_path):
    nodes, slices, result = _carve(
        tpu7x_queue, real_k8s, tmp_path, "super-slice", "tpu7x-4x4x4", 16,
        # 16 processes: the placement is what is tested, so no JAX start-up for each.
        entrypoint="gated_train:hold_until_placed", initialize_distributed=False,
    )  # fmt: skip
    assert result["processes"] == 16
    cubes = {n["cloud.google.com/gke-tpu-partition-4x4x4-id"] for n in nodes}
    assert cubes == {"tpu7x-cube-a"} and len({n["kubernetes.io/hostname"] for n in nodes}) == 16
    assert [s["spec"] for s in slices] == [
        {"type": "tpu7x", "topology": "4x4x4", "partitionIds": ["tpu7x-cube-a"]}
    ]
