"""Dynamic slicing (tpu7x super- and sub-slices): our JobSet against xpk's own super-slicing
renderer (recorded in tests/fixtures/xpk by record_dynamic_slicing.py) for every shape in
xpk's table at 1 and 2 slices; the Kueue keys against the rules of GKE's slice controller's
webhook; and the values that cannot be carved or admitted, refused at parse."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_jax.manifest import dynamic_slicing
from airflow_provider_jax.manifest.accelerators import parse_tpu
from airflow_provider_jax.manifest.accelerators.tpu_shapes import SMALL_3D
from airflow_provider_jax.manifest.build import build_jobset
from airflow_provider_jax.manifest.jobset_api import EXCLUSIVE_TOPOLOGY_ANNOTATION
from airflow_provider_jax.manifest.spec import JaxJobSpec
from airflow_provider_jax.operators import JaxTpuSliceOperator

RECORDED = json.loads((Path(__file__).parents[1] / "fixtures/xpk/dynamic_slicing.json").read_text())
QUEUE = RECORDED["common"]["queue_label"]
# The slice controller's rules (tpu-slice-controller, internal/topology/topology.go and
# internal/webhooks): what it writes on a relevant pod template, as facts.
BLOCK = "cloud.google.com/gce-topology-block"
CUBE = "cloud.google.com/gke-tpu-partition-4x4x4-id"
CUBE_CHIPS = 64


def jobset(device: str, num_slices: int = 1, **spec: Any) -> dict[str, Any]:
    acc = parse_tpu(device, dynamic_slicing=True)
    made = JaxJobSpec(
        name="train", accelerator=acc, image="img", command=["python", "train.py"],
        num_slices=num_slices, queue_name=QUEUE, **spec,
    )  # fmt: skip
    return build_jobset(made)


def xpk_fields(js: dict[str, Any]) -> dict[str, Any]:
    """Our JobSet's values for the fields the fixture holds, as xpk's renderer spells them."""
    rjob = js["spec"]["replicatedJobs"][0]
    pod = rjob["template"]["spec"]["template"]
    containers = pod["spec"]["containers"]
    return {
        "queue_label": js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
        "jobset_annotations": js["metadata"].get("annotations", {}),
        "replicas": rjob["replicas"],
        "parallelism": rjob["template"]["spec"]["parallelism"],
        "completions": rjob["template"]["spec"]["completions"],
        "pod_annotations": pod["metadata"]["annotations"],
        "node_selector": pod["spec"]["nodeSelector"],
        "host_network": pod["spec"]["hostNetwork"],
        "dns_policy": pod["spec"]["dnsPolicy"],
        # xpk's toleration has no effect (it tolerates every effect of the taint); GKE taints
        # TPU nodes NoSchedule, which ours names.
        "tolerations": [
            {"operator": t["operator"], "key": t["key"]} for t in pod["spec"]["tolerations"]
        ],
        "containers": len(containers),
        "chips_per_container": [
            int(c["resources"]["limits"]["google.com/tpu"]) for c in containers
        ],
    }


def test_every_super_slice_shape_renders_as_xpk_renders_it_at_one_and_two_slices():
    shapes, fields = set(), 0
    for case in RECORDED["cases"]:
        expected = {**RECORDED["common"], **{k: v for k, v in case.items() if k not in
                    ("device", "num_slices")}}  # fmt: skip
        got = xpk_fields(jobset(case["device"], case["num_slices"]))
        # Ours adds the Kueue keys the slice controller's webhook would write (checked below).
        got["pod_annotations"] = {
            k: v for k, v in got["pod_annotations"].items() if k in expected["pod_annotations"]
        }
        assert got == expected, case["device"]
        shapes.add(case["device"])
        fields += len(expected)
    assert len(shapes) == 428 and len(RECORDED["cases"]) == 856  # xpk 1.16's table
    assert fields == 856 * 12


@pytest.mark.parametrize("device", ["tpu7x-4x4x4", "tpu7x-4x8x8", "tpu7x-12x12x16"])
@pytest.mark.parametrize("num_slices", [1, 2])
def test_a_super_slice_asks_kueue_for_whole_cubes_in_one_block(device, num_slices):
    js = jobset(device, num_slices)
    assert EXCLUSIVE_TOPOLOGY_ANNOTATION not in js["metadata"].get("annotations", {})
    job = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    pod = job["template"]
    annotations = pod["metadata"]["annotations"]
    topology = device.removeprefix("tpu7x-")
    cubes = math.prod(int(s) // 4 for s in topology.split("x"))
    # supersliceTopology.SliceSize: parallelism / cubes; the webhook's fill rule per cube.
    size = job["parallelism"] // cubes
    assert annotations == {
        "cloud.google.com/gke-tpu-slice-topology": topology,
        "kueue.x-k8s.io/podset-required-topology": BLOCK,
        "kueue.x-k8s.io/podset-slice-required-topology": CUBE,
        "kueue.x-k8s.io/podset-slice-size": str(size),
    }
    chips = int(pod["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"])
    assert chips * size == CUBE_CHIPS
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert ("MEGASCALE_NUM_SLICES" in env) == (num_slices > 1)
    if num_slices > 1:
        assert env["MEGASCALE_NUM_SLICES"] == "2"


@pytest.mark.parametrize("topology", SMALL_3D)
def test_a_sub_slice_asks_kueue_for_a_partition_of_its_own_shape(topology):
    multi = topology != "2x2x1"  # GKE's multislice needs multi-host slices
    js = jobset(f"tpu7x-{topology}", 2 if multi else 1)
    assert EXCLUSIVE_TOPOLOGY_ANNOTATION not in js["metadata"].get("annotations", {})
    job = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    pod = job["template"]
    assert pod["spec"]["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu7x"}
    # subsliceTopology: its own partition level; SliceSize is the parallelism.
    assert pod["metadata"]["annotations"] == {
        "cloud.google.com/gke-tpu-slice-topology": topology,
        "kueue.x-k8s.io/podset-required-topology": BLOCK,
        "kueue.x-k8s.io/podset-slice-required-topology": (
            f"cloud.google.com/gke-tpu-partition-{topology}-id"
        ),
        "kueue.x-k8s.io/podset-slice-size": str(job["parallelism"]),
    }
    chips = int(pod["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"])
    assert chips * job["parallelism"] == math.prod(int(s) for s in topology.split("x"))


def test_the_name_limit_is_xpks_in_the_default_namespace_and_shrinks_with_a_longer_one():
    assert dynamic_slicing.max_name_length("default") == RECORDED["name_limit"]
    assert dynamic_slicing.max_name_length("team-research") == RECORDED["name_limit"] - 6
    op = JaxTpuSliceOperator(
        task_id="a-task-id-long-enough-to-be-cut-short-by-the-limit",
        accelerator="tpu7x-4x4x4",
        dynamic_slicing=True,
        queue_name="q",
        image="img",
        entrypoint="m:f",
    )
    name = op._default_name("dag", "manual__2026-11-28", -1)
    assert len(name) == RECORDED["name_limit"]


def test_without_it_a_tpu7x_slice_keeps_its_static_node_pool():
    acc = parse_tpu("tpu7x-4x4x4")
    js = build_jobset(JaxJobSpec(name="train", accelerator=acc, image="img", command=["python"]))
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "4x4x4"
    assert js["metadata"]["annotations"][EXCLUSIVE_TOPOLOGY_ANNOTATION]
    assert "cloud.google.com/gke-tpu-slice-topology" not in pod["metadata"].get("annotations", {})


BASE = {"task_id": "t", "queue_name": "q", "image": "img", "entrypoint": "m:f"}


@pytest.mark.parametrize(
    ("accelerator", "extra", "message"),
    [
        # Shapes dynamic slicing cannot carve, each with the valid ones named.
        ("tpu7x-4x4x6", {}, "every side is a multiple of 4 (at most 256). Closest valid"),
        ("tpu7x-8x4x4", {}, "A <= B <= C). Closest valid shapes: 'tpu7x-4x4x8'"),
        ("tpu7x-24x24x24", {}, "the largest slice is 144 4x4x4 cubes"),
        ("tpu7x-1x1x1", {}, "it carves the sub-slices 2x2x1, 2x2x2, 2x2x4, 2x4x4 of a 4x4x4"),
        ("tpu-v6e-16", {}, "dynamic_slicing is GKE's for Ironwood (tpu7x) only"),
        ("tpu7-4x4x4", {}, "dynamic_slicing is GKE's for Ironwood (tpu7x) only"),
        # A sub-slice whose pods would not fill it.
        ("tpu7x-2x2x2", {"container_resources": {"limits": {"google.com/tpu": "2"}}},
         "needs all 4 chips of each host"),
        ("tpu7x-2x2x4", {"pod_template_override": {"spec": {"containers": [
            {"name": "jax", "resources": {"limits": {"google.com/tpu": "1"}}}]}}},
         "a 2x2x4 slice needs exactly 16 chips per partition"),
        ("tpu7x-2x2x1", {"pod_template_override": {"spec": {"containers": [
            {"name": "jax", "resources": {"limits": {"google.com/tpu": "4k"}}}]}}},
         "a container's limit is not a whole number of chips"),
        # What Kueue and the slice controller need, and what they write themselves.
        ("tpu7x-4x4x4", {"queue_name": None}, "set queue_name to a LocalQueue"),
        ("tpu7x-4x4x4", {"num_slices": 2, "placement": "compact"},
         "placement does not go with dynamic_slicing"),
        ("tpu7x-4x4x4", {"capacity": "spot"}, "capacity 'spot' does not go with dynamic"),
        ("tpu7x-4x4x4", {"capacity": ["reservation:r", "flex-start"]},
         "capacity 'flex-start' does not go"),
        ("tpu7x-4x4x4", {"node_selector": {"cloud.google.com/gke-tpu-topology": "4x4x4"}},
         "node_selector sets 'cloud.google.com/gke-tpu-topology'"),
        ("tpu7x-4x4x4", {"annotations": {"kueue.x-k8s.io/podset-slice-size": "1"}},
         "annotations sets 'kueue.x-k8s.io/podset-slice-size' in its pods' annotations"),
        ("tpu7x-4x4x4", {"name": "x" * 29}, "it may have at most 28"),
        ("tpu7x-4x4x4", {"name": "x" * 23, "namespace": "team-research"},
         "in namespace 'team-research' it may have at most 22"),
    ],
)  # fmt: skip
def test_what_cannot_be_carved_or_admitted_is_refused_at_parse(accelerator, extra, message):
    with pytest.raises(ValueError) as err:
        JaxTpuSliceOperator(**{**BASE, **extra}, accelerator=accelerator, dynamic_slicing=True)
    assert message in str(err.value)


@pytest.mark.parametrize("value", ["yes", "True\n", 1, 0, None, float("nan")])
def test_dynamic_slicing_is_a_bool(value):
    with pytest.raises(TypeError, match="dynamic_slicing must be True or False"):
        JaxTpuSliceOperator(**BASE, accelerator="tpu7x-4x4x4", dynamic_slicing=value)
